// The reference probe's request, its one reader, and the sentences it is reported in.
#include "engine/evaluate/reference_probe.h"
#include "support/text.h"

#include "engine/evaluate/harness_client.h"

#include <stdexcept>

namespace kblaster::engine {
bool reference_probe::constant_output() const {
  for (const auto& o : outputs)
    if (o.constant) return true;
  return false;
}

bool reference_probe::degenerate() const {
  if (constant_output()) return true;
  for (const auto& i : inputs)
    if (i.ignored) return true;
  return false;
}

std::string reference_probe::summary() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  for (const auto& o : outputs)
    if (o.constant)
      add("degenerate: " + (outputs.size() == 1 ? std::string("output") : o.label) + " constant over the declared inputs");
  for (const auto& i : inputs)
    if (i.ignored) add("degenerate: output does not depend on " + i.label);
  return out;
}

std::vector<std::string> reference_probe::findings() const {
  std::vector<std::string> out;
  const std::string on = "on " + std::to_string(draws) + " draws of the declared inputs";
  for (const auto& o : outputs) {
    if (!o.constant) continue;
    if (o.value)
      out.push_back("the reference's " + o.label + " is always " + support::significant_text(*o.value, 6) +
                    " (every element, " + on + "): a kernel that writes " + support::significant_text(*o.value, 6) +
                    " passes verification without computing anything");
    else
      out.push_back("the reference's " + o.label + " is the same " + on +
                    ", within its tolerance (largest difference " + support::significant_text(o.spread, 6) +
                    "): a kernel that writes a stored copy passes verification");
  }
  for (const auto& i : inputs)
    if (i.ignored)
      out.push_back("the reference's outputs do not depend on " + i.label + " (a fresh draw of it alone changed none " +
                    "beyond its tolerance): a kernel may ignore it and pass verification");
  return out;
}

reference_probe reference_probe_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("a reference probe must be a JSON object");
  reference_probe p;
  // The harness's error reply, or a stored probe that did not run.
  if (j.value("verdict", "") == "error") {
    p.error = j.value("reason", std::string("the harness answered an error without a reason"));
    return p;
  }
  if (j.contains("error")) {
    p.error = j.at("error").get<std::string>();
    return p;
  }
  try {
    p.draws = j.at("draws").get<int>();
    for (const auto& o : j.at("outputs")) {
      output_probe out;
      out.label = o.at("label").get<std::string>();
      out.constant = o.at("constant").get<bool>();
      out.spread = o.value("spread", 0.0);
      if (o.contains("value") && !o["value"].is_null()) out.value = o["value"].get<double>();
      p.outputs.push_back(std::move(out));
    }
    for (const auto& i : j.at("inputs")) {
      input_probe in;
      in.label = i.at("label").get<std::string>();
      in.checked = i.at("checked").get<bool>();
      in.ignored = in.checked && i.value("ignored", false);
      in.change = i.value("change", 0.0);
      in.why = i.value("why", "");
      p.inputs.push_back(std::move(in));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("reference probe: a missing or mistyped field: ") + e.what());
  }
  return p;
}

nlohmann::json to_json(const reference_probe& p) {
  if (!p.ran()) return {{"error", p.error}};
  nlohmann::json outputs = nlohmann::json::array(), inputs = nlohmann::json::array();
  for (const auto& o : p.outputs) {
    nlohmann::json j{{"label", o.label}, {"constant", o.constant}, {"spread", o.spread}};
    if (o.value) j["value"] = *o.value;
    outputs.push_back(std::move(j));
  }
  for (const auto& i : p.inputs) {
    nlohmann::json j{{"label", i.label}, {"checked", i.checked}};
    if (i.checked) j.update({{"ignored", i.ignored}, {"change", i.change}});
    else j["why"] = i.why;
    inputs.push_back(std::move(j));
  }
  // Derived, for readers of the file; the reader ignores them.
  return {{"draws", p.draws}, {"outputs", outputs}, {"inputs", inputs}, {"degenerate", p.degenerate()},
          {"summary", p.summary()}};
}

reference_probe probe_reference(harness_client& client, const task_spec& task, const std::string& reference_library,
                                std::stop_token stop) {
  nlohmann::json req{{"op", "probe_reference"}, {"task", to_json(task)}};
  if (!reference_library.empty()) req["reference_library"] = reference_library;
  const auto reply = client.request(req, stop);
  reference_probe p;
  if (!reply.ok()) {
    p.error = reply.message;
    return p;
  }
  try {
    return reference_probe_from_json(reply.body);
  } catch (const std::runtime_error& e) {
    p.error = std::string("the harness's reply: ") + e.what();
    return p;
  }
}

}  // namespace kblaster::engine
