// The step record's JSON form: the field names of steps.jsonl. Optional fields are left out
// when absent, as the checkpoint has always written them.
#include "engine/optimize/step_record.h"

#include "engine/evaluate/optional_fields.h"

#include <stdexcept>

namespace kblaster::engine::optimize {
namespace {
using json = nlohmann::json;

step_tier tier_from_string(const std::string& s) {
  if (s == "mechanical") return step_tier::mechanical;
  if (s == "llm") return step_tier::llm;
  if (s.empty()) return step_tier::none;
  throw std::invalid_argument("unknown tier '" + s + "'");
}

candidate_record candidate_from_json(const json& c) {
  if (!c.is_object()) throw std::invalid_argument("a candidate is not an object");
  candidate_record out;
  out.technique = c.value("technique", "");
  out.label = c.value("label", "");
  out.hash = c.at("hash").get<std::string>();
  out.parameters = c.value("parameters", json::object());
  out.eval = evaluation_from_json(c.at("evaluation"));
  out.state_after = c.value("state_after", "");
  out.measured_speedup = get_optional<double>(c, "measured_speedup");
  if (c.contains("soft_verifier")) {
    const auto& s = c["soft_verifier"];
    out.soft_verifier = soft_verdict{s.at("pass").get<bool>(), s.value("summary", "")};
  }
  return out;
}

}  // namespace

void step_record::add_tokens(const std::string& role, std::int64_t n) {
  if (n > 0) tokens[role] += n;
}

double step_record::candidates_gpu_seconds() const {
  double s = 0;
  for (const auto& c : candidates) s += c.eval.gpu_seconds;
  return s;
}

std::string to_string(step_tier t) {
  switch (t) {
    case step_tier::mechanical: return "mechanical";
    case step_tier::llm: return "llm";
    case step_tier::none: return "";
  }
  return "";
}

json to_json(const candidate_record& c) {
  json j{{"technique", c.technique}, {"label", c.label},       {"hash", c.hash},
         {"parameters", c.parameters}, {"evaluation", to_json(c.eval)}, {"state_after", c.state_after}};
  put_optional(j, "measured_speedup", c.measured_speedup);
  if (c.soft_verifier) j["soft_verifier"] = {{"pass", c.soft_verifier->pass}, {"summary", c.soft_verifier->summary}};
  return j;
}

json to_json(const step_record& r) {
  json j{{"iteration", r.iteration},       {"trajectory", r.trajectory}, {"step", r.step},
         {"start", r.start},               {"start_ms", r.start_ms},     {"state_before", r.state_before},
         {"state_score", r.state_score},   {"candidates", json::array()}, {"tokens", r.tokens},
         {"result", r.result},             {"end", r.end}};
  for (const auto& c : r.candidates) j["candidates"].push_back(to_json(c));
  put_optional(j, "note", r.note);
  if (r.tier != step_tier::none) j["tier"] = to_string(r.tier);
  if (r.technique) {
    j["technique"] = *r.technique;
    j["reason"] = r.reason;
  }
  put_optional(j, "predicted", r.predicted);
  put_optional(j, "confidence", r.confidence);
  put_optional(j, "repairs", r.repairs);
  put_optional(j, "failures", r.failures);
  put_optional(j, "agent_status", r.agent_status);
  if (r.technique) j["gpu_seconds"] = r.gpu_seconds;
  return j;
}

step_record step_record_from_json(const json& j) {
  try {
    if (!j.is_object()) throw std::invalid_argument("expected an object");
    step_record r;
    r.iteration = integer_field<int>(j.at("iteration"), "iteration");
    r.trajectory = integer_field<int>(j.at("trajectory"), "trajectory");
    r.step = integer_field<int>(j.at("step"), "step");
    r.start = j.at("start").get<std::string>();
    r.start_ms = j.value("start_ms", 0.0);
    r.state_before = j.value("state_before", "unknown");
    r.state_score = j.value("state_score", 0.0);
    for (const auto& c : j.value("candidates", json::array())) r.candidates.push_back(candidate_from_json(c));
    if (j.contains("tokens")) {
      if (!j["tokens"].is_object()) throw std::invalid_argument("'tokens' must be an object of role -> count");
      for (const auto& [role, n] : j["tokens"].items()) r.tokens[role] = integer_field<std::int64_t>(n, "tokens");
    }
    r.result = j.value("result", r.start);
    r.end = j.value("end", false);
    r.note = get_optional<std::string>(j, "note");
    r.tier = tier_from_string(j.value("tier", ""));
    r.technique = get_optional<std::string>(j, "technique");
    r.reason = j.value("reason", "");
    r.predicted = get_optional<double>(j, "predicted");
    r.confidence = get_optional<double>(j, "confidence");
    r.repairs = get_optional<int>(j, "repairs");
    r.failures = get_optional<std::vector<std::string>>(j, "failures");
    r.agent_status = get_optional<std::string>(j, "agent_status");
    r.gpu_seconds = j.value("gpu_seconds", r.candidates_gpu_seconds());
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("step record: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("step record: ") + e.what());
  }
}

}  // namespace kblaster::engine::optimize
