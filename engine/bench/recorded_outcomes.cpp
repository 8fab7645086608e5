// recorded_outcomes: serve a problem's loop outcome from a file.
#include "engine/bench/recorded_outcomes.h"

#include <memory>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

namespace {

std::optional<double> opt(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

}  // namespace

void use_recorded_outcomes(bench_hooks& hooks, const fs::path& dir) {
  if (!fs::is_directory(dir)) throw store_error("--recorded " + dir.string() + " is not a folder");
  // The optimize hook does not know the level; the task directory's name (RUN/tasks/KEY) does.
  hooks.optimize = [dir](const task_spec& task, const optimize::loop_options&, optimize::run_environment& env) {
    auto dir_path = fs::path(task.dir).lexically_normal();
    if (dir_path.filename().empty()) dir_path = dir_path.parent_path();
    const auto key = dir_path.filename().string();
    const auto file = dir / (key + ".json");
    if (!fs::exists(file)) throw std::runtime_error("no recorded outcome " + file.string());
    const auto j = read_json_file(file);
    if (j.contains("input_failed")) throw optimize::evaluation_error(j["input_failed"].get<std::string>());
    optimize::optimize_result r;
    r.input_ms = opt(j, "input_ms");
    r.best_ms = opt(j, "best_ms");
    r.reference_ms = opt(j, "reference_ms");
    r.tokens = j.value("tokens", std::int64_t{0});
    r.gpu_seconds = j.value("gpu_seconds", 0.0);
    r.candidates = j.value("candidates", 0);
    r.correct_candidates = j.value("correct_candidates", 0);
    r.stop_reason = {optimize::stop_kind::recorded, ""};
    r.run_id = "recorded:" + key;
    (void)env;
    return r;
  };
  hooks.amend = [dir](problem_result& r) {
    const auto file = dir / (result_key(r.level, r.problem) + ".json");
    if (!fs::exists(file)) return;
    const auto j = read_json_file(file);
    // The exporter's times were recorded on the GPU with the rest; the CPU import's are replaced.
    if (j.contains("eager_ms")) r.eager_ms = opt(j, "eager_ms");
    if (j.contains("compile_ms")) r.compile_ms = opt(j, "compile_ms");
    // The probe of the reference ran on the GPU with the rest (no harness runs here).
    if (j.contains("degenerate") && j["degenerate"].is_string()) r.degenerate = j["degenerate"].get<std::string>();
    if (r.status != "ok") return;
    for (const auto& t : j.value("techniques", nlohmann::json::array()))
      r.techniques.push_back({t.value("technique", ""), t.value("success", false)});
    r.states_visited = j.value("states_visited", std::vector<std::string>{});
    for (const auto& a : j.value("attempts", nlohmann::json::array()))
      r.attempts.push_back({a.value("technique", ""), a.value("state", ""), opt(a, "speedup")});
    r.arch = j.value("arch", "");
  };
}

}  // namespace kblaster::engine::bench
