// problem_result: JSON form and the speedups derived from the stored times.
#include "engine/bench/problem_result.h"

#include <stdexcept>

namespace kblaster::engine::bench {

namespace {

bool usable(const std::optional<double>& v) { return v && *v > 0; }

void put(nlohmann::json& j, const char* key, const std::optional<double>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> get_ms(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) throw std::runtime_error(std::string("result field '") + key + "' must be a number or null");
  return j[key].get<double>();
}

}  // namespace

speedups speedups_of(const problem_result& r) {
  speedups s;
  if (!r.valid || !usable(r.best_ms)) return s;
  const double best = *r.best_ms;
  if (usable(r.reference_ms)) s.eager = *r.reference_ms / best;
  else if (usable(r.eager_ms)) s.eager = *r.eager_ms / best;
  if (usable(r.compile_ms)) {
    // The exporter's timer and the harness's differ (the harness flushes L2); keep the exporter's
    // compile/eager ratio and apply it to the harness's reference time.
    if (usable(r.reference_ms) && usable(r.eager_ms)) s.compile = *r.reference_ms * (*r.compile_ms / *r.eager_ms) / best;
    else s.compile = *r.compile_ms / best;
  }
  if (s.eager && s.compile) s.best_baseline = std::min(*s.eager, *s.compile);
  else s.best_baseline = s.eager ? s.eager : s.compile;
  return s;
}

nlohmann::json to_json(const problem_result& r) {
  nlohmann::json j{{"problem", r.problem}, {"level", r.level}, {"file", r.file}, {"status", r.status},
                   {"error", r.error}, {"valid", r.valid}, {"degenerate", r.degenerate}, {"tokens", r.tokens},
                   {"gpu_seconds", r.gpu_seconds}, {"wall_seconds", r.wall_seconds}, {"candidates", r.candidates},
                   {"correct_candidates", r.correct_candidates}, {"states_visited", r.states_visited},
                   {"initial_kernel", r.initial_kernel}, {"stop_reason", r.stop_reason}, {"run_id", r.run_id},
                   {"worker", r.worker}, {"finished_at", r.finished_at}};
  if (r.import_cached) j["import_cached"] = true;
  put(j, "import_seconds", r.import_seconds);
  put(j, "eager_ms", r.eager_ms);
  put(j, "compile_ms", r.compile_ms);
  put(j, "reference_ms", r.reference_ms);
  put(j, "input_ms", r.input_ms);
  put(j, "best_ms", r.best_ms);
  auto& phases = j["candidate_phases"] = nlohmann::json::array();
  for (const auto& p : r.candidate_phases) phases.push_back(optimize::to_json(p));
  if (r.input_phases) j["input_phases"] = optimize::to_json(*r.input_phases);
  auto& t = j["techniques"] = nlohmann::json::array();
  for (const auto& u : r.techniques) t.push_back({{"technique", u.technique}, {"success", u.success}});
  auto& a = j["attempts"] = nlohmann::json::array();
  for (const auto& p : r.attempts)
    a.push_back({{"technique", p.technique}, {"state", p.state},
                 {"speedup", p.speedup ? nlohmann::json(*p.speedup) : nlohmann::json(nullptr)}});
  j["arch"] = r.arch;
  const auto s = speedups_of(r);
  // Derived, for readers of the file; problem_result_from_json ignores them.
  j["speedup"] = {{"eager", s.eager ? nlohmann::json(*s.eager) : nlohmann::json(nullptr)},
                  {"compile", s.compile ? nlohmann::json(*s.compile) : nlohmann::json(nullptr)},
                  {"best_baseline", s.best_baseline ? nlohmann::json(*s.best_baseline) : nlohmann::json(nullptr)}};
  return j;
}

problem_result problem_result_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("a result must be a JSON object");
  for (const char* key : {"problem", "level"})
    if (!j.contains(key)) throw std::runtime_error(std::string("result has no '") + key + "'");
  problem_result r;
  try {
    r.problem = j.at("problem").get<std::string>();
    r.level = j.at("level").get<int>();
    r.file = j.value("file", "");
    r.status = j.value("status", "ok");
    r.error = j.value("error", "");
    r.valid = j.value("valid", false);
    r.degenerate = j.value("degenerate", "");
    r.tokens = j.value("tokens", std::int64_t{0});
    r.gpu_seconds = j.value("gpu_seconds", 0.0);
    r.wall_seconds = j.value("wall_seconds", 0.0);
    r.candidates = j.value("candidates", 0);
    r.correct_candidates = j.value("correct_candidates", 0);
    r.states_visited = j.value("states_visited", std::vector<std::string>{});
    r.initial_kernel = j.value("initial_kernel", "");
    r.stop_reason = j.value("stop_reason", "");
    r.run_id = j.value("run_id", "");
    r.worker = j.value("worker", "");
    r.finished_at = j.value("finished_at", "");
    for (const auto& p : j.value("candidate_phases", nlohmann::json::array()))
      r.candidate_phases.push_back(optimize::phases_from_json(p));
    if (j.contains("input_phases")) r.input_phases = optimize::phases_from_json(j["input_phases"]);
    for (const auto& t : j.value("techniques", nlohmann::json::array()))
      r.techniques.push_back({t.at("technique").get<std::string>(), t.value("success", false)});
    for (const auto& a : j.value("attempts", nlohmann::json::array()))
      r.attempts.push_back({a.at("technique").get<std::string>(), a.value("state", ""), get_ms(a, "speedup")});
    r.arch = j.value("arch", "");
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("result of '") + j.value("problem", "?") + "' has a mistyped field: " + e.what());
  }
  r.import_cached = j.value("import_cached", false);
  r.import_seconds = get_ms(j, "import_seconds");
  r.eager_ms = get_ms(j, "eager_ms");
  r.compile_ms = get_ms(j, "compile_ms");
  r.reference_ms = get_ms(j, "reference_ms");
  r.input_ms = get_ms(j, "input_ms");
  r.best_ms = get_ms(j, "best_ms");
  return r;
}

std::string result_key(int level, const std::string& problem) { return "L" + std::to_string(level) + "_" + problem; }

}  // namespace kblaster::engine::bench
