// The evaluator's value types: the candidate hash and the JSON form shared by the recorder,
// the checkpoint and the run report. Absent optionals are left out of the JSON, not null.
#include "engine/evaluate/evaluator.h"
#include "engine/evaluate/optional_fields.h"
#include "engine/state/state_classifier.h"
#include "engine/state/state_evidence.h"
#include "support/hash.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kblaster::engine::optimize {
namespace {

// nlohmann's messages name no field; say which object was being read.
template <typename F>
auto reading(const char* what, F&& f) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string(what) + ": " + e.what());
  }
}

}  // namespace

std::string source_hash(const std::string& task_name, const std::string& source) {
  // The NUL keeps ("ab", "c") and ("a", "bc") apart.
  std::uint64_t h = support::fnv1a(task_name);
  h = support::fnv1a(std::string_view("\0", 1), h);
  return support::hex64(support::fnv1a(source, h));
}

nlohmann::json to_json(const profile_snapshot& p) {
  nlohmann::json j{{"kernel", p.kernel}, {"primary", p.primary}, {"secondary", p.secondary},
                   {"summary", p.summary}, {"view", p.view}, {"source", p.source}};
  put_optional(j, "elapsed_cycles", p.elapsed_cycles);
  if (!p.report_path.empty()) j["report_path"] = p.report_path;
  if (!p.shape_note.empty()) j["shape_note"] = p.shape_note;
  nlohmann::json chars = nlohmann::json::array();
  for (const auto& c : p.evidence.secondary) chars.push_back({{"name", c.name}, {"weight", c.weight}});
  j["evidence"] = {{"primary_weight", p.evidence.primary_weight}, {"secondary", chars},
                   {"facts", p.evidence.facts}, {"measured", p.evidence.measured}};
  return j;
}

namespace {

// Recordings made before snapshots carried their evidence: the same evidence rebuilt from the
// view they do carry (to_json(kernel_view)), through the one function that weighs a signature.
kb::kernel_evidence evidence_from_view(const profile_snapshot& p) {
  const auto& v = p.view;
  performance_signature s;
  s.primary = p.primary.empty() ? std::string(primary::unknown) : p.primary;
  s.function = v.value("function", p.kernel);
  s.static_only = v.value("static_only", p.source == "static");
  s.sol_band = v.value("sol_band", "");
  const auto sol = v.value("sol", nlohmann::json::object());
  auto number = [](const nlohmann::json& o, const char* key) -> std::optional<double> {
    return o.contains(key) && o[key].is_number() ? std::optional<double>(o[key].get<double>()) : std::nullopt;
  };
  s.sol.compute_pct = number(sol, "compute_pct");
  s.sol.memory_pct = number(sol, "memory_pct");
  s.sol.duration_us = number(sol, "duration_us");
  const auto evidence = v.value("secondary_evidence", nlohmann::json::object());
  for (const auto& name : p.secondary)
    s.secondary.push_back({name, "", evidence.contains(name) ? number(evidence[name], "estimated_speedup") : std::nullopt});
  std::optional<double> launch;
  for (const auto& f : v.value("findings", nlohmann::json::array()))
    if (f.value("rule", "") == "LaunchConfiguration") launch = number(f, "estimated_speedup");
  s.primary_weight = primary_weight_of(s, launch);
  s.launches_in_run = integer_or(v, "profiled_kernels", 1);
  s.global_load_reuse = number(v, "global_load_reuse");
  return kb_evidence(s);
}

}  // namespace

profile_snapshot snapshot_from_json(const nlohmann::json& j) {
  return reading("profile snapshot", [&] {
    if (!j.is_object()) throw std::invalid_argument("profile snapshot: expected an object, got " + j.dump().substr(0, 80));
    profile_snapshot p;
    p.kernel = j.value("kernel", "");
    p.primary = j.value("primary", "");
    p.secondary = j.value("secondary", std::vector<std::string>{});
    p.summary = j.value("summary", "");
    p.view = j.value("view", nlohmann::json::object());
    p.elapsed_cycles = get_optional<std::int64_t>(j, "elapsed_cycles");
    p.source = j.value("source", "ncu");
    p.report_path = j.value("report_path", "");
    p.shape_note = j.value("shape_note", "");
    if (j.contains("evidence") && j["evidence"].is_object()) {
      const auto& e = j["evidence"];
      p.evidence.primary = p.primary;
      p.evidence.primary_weight = e.value("primary_weight", 0.0);
      for (const auto& c : e.value("secondary", nlohmann::json::array()))
        p.evidence.secondary.push_back({c.at("name").get<std::string>(), c.value("weight", 0.0)});
      for (const auto& f : e.value("facts", std::vector<std::string>{})) p.evidence.facts.insert(f);
      p.evidence.measured = e.value("measured", true);
    } else {
      p.evidence = evidence_from_view(p);
    }
    return p;
  });
}

nlohmann::json to_json(const phase_seconds& p) {
  nlohmann::json j{{"build", p.build},   {"build_wait", p.build_wait}, {"harness_start", p.harness_start},
                   {"reference", p.reference}, {"runner", p.runner}, {"verify", p.verify},
                   {"time", p.time},     {"profile", p.profile}, {"profile_report", p.profile_report}, {"profile_export", p.profile_export}};
  if (p.device_wait > 0) j["device_wait"] = p.device_wait;  // only where another measurement held the GPU
  return j;
}

phase_seconds phases_from_json(const nlohmann::json& j) {
  phase_seconds p;
  if (!j.is_object()) return p;
  p.build = j.value("build", 0.0);
  p.build_wait = j.value("build_wait", p.build);
  p.harness_start = j.value("harness_start", 0.0);
  p.reference = j.value("reference", 0.0);
  p.runner = j.value("runner", 0.0);
  p.verify = j.value("verify", 0.0);
  p.time = j.value("time", 0.0);
  p.profile = j.value("profile", 0.0);
  p.profile_report = j.value("profile_report", 0.0);
  p.profile_export = j.value("profile_export", 0.0);
  p.device_wait = j.value("device_wait", 0.0);
  return p;
}

evaluation without_profile(evaluation e) {
  if (!e.profile) return e;
  e.profile.reset();
  e.profile_note.clear();
  e.gpu_seconds = std::max(0.0, e.gpu_seconds - e.phases.profile);
  e.phases.profile = 0;
  e.phases.profile_report = 0;
  e.phases.profile_export = 0;
  return e;
}

nlohmann::json to_json(const evaluation& e) {
  nlohmann::json j{{"code_hash", e.code_hash},   {"compile_ok", e.compile_ok}, {"compile_log", e.compile_log},
                   {"correct", e.correct},       {"verdict", e.verdict},       {"check", e.check},
                   {"reason", e.reason},         {"gpu_seconds", e.gpu_seconds}, {"build_seconds", e.build_seconds},
                   {"gpu_name", e.gpu_name},     {"arch", e.arch},             {"replayed", e.replayed},
                   {"harness", e.harness}};
  put_optional(j, "runtime_ms", e.runtime_ms);
  put_optional(j, "reference_ms", e.reference_ms);
  if (e.timed_until_slower) j["timed_until_slower"] = true;  // absent when false: older recordings read the same
  if (e.profile) j["profile"] = to_json(*e.profile);
  if (!e.profile_note.empty()) j["profile_note"] = e.profile_note;
  j["phases"] = to_json(e.phases);
  return j;
}

evaluation evaluation_from_json(const nlohmann::json& j) {
  return reading("evaluation", [&] {
    if (!j.is_object()) throw std::invalid_argument("evaluation: expected an object, got " + j.dump().substr(0, 80));
    if (!j.contains("code_hash") || !j.contains("verdict"))
      throw std::invalid_argument("evaluation: 'code_hash' and 'verdict' are required");
    evaluation e;
    e.code_hash = j.at("code_hash").get<std::string>();
    e.compile_ok = j.value("compile_ok", false);
    e.compile_log = j.value("compile_log", "");
    e.correct = j.value("correct", false);
    e.verdict = j.at("verdict").get<std::string>();
    e.check = j.value("check", "");
    e.reason = j.value("reason", "");
    e.runtime_ms = get_optional<double>(j, "runtime_ms");
    e.reference_ms = get_optional<double>(j, "reference_ms");
    e.timed_until_slower = j.value("timed_until_slower", false);
    if (j.contains("profile") && !j["profile"].is_null()) e.profile = snapshot_from_json(j["profile"]);
    e.gpu_seconds = j.value("gpu_seconds", 0.0);
    e.build_seconds = j.value("build_seconds", 0.0);
    e.gpu_name = j.value("gpu_name", "");
    e.arch = j.value("arch", "");
    e.profile_note = j.value("profile_note", "");
    e.replayed = j.value("replayed", false);
    e.harness = j.value("harness", nlohmann::json::object());
    if (j.contains("phases")) {
      e.phases = phases_from_json(j["phases"]);
    } else {  // recorded before phases: the build, and the rest as one undivided request
      e.phases.build = e.phases.build_wait = e.build_seconds;
      e.phases.verify = e.gpu_seconds;
    }
    return e;
  });
}

}  // namespace kblaster::engine::optimize
