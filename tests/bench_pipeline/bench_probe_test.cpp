// The bench driver's reference probe (bench_hooks::probe): each imported problem's reference is
// probed before its loop, a degenerate one is stored marked with why, its warning is logged, and
// the metrics leave it out; a probe that fails or is absent changes nothing. The import, the probe
// and the loop are stand-ins here (the real probe runs in tests/harness/reference_probe_test.cpp).
#include "engine/bench/metrics.h"
#include "engine/bench/runner.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <map>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::bench;

namespace {

struct temp_dir : kblaster::testing::temp_dir {
  temp_dir() : kblaster::testing::temp_dir("bench-probe") { fs::create_directories(path / "kernelbench" / "level2"); }
};

// A probe as the harness would give it: output 0 constant for 1_Clamp, healthy otherwise.
reference_probe fake_probe(const task_spec& task) {
  nlohmann::json reply{{"draws", 3},
                       {"outputs", {{{"label", "output 0"}, {"constant", task.name == "1_Clamp"}, {"value", 0.0}}}},
                       {"inputs", nlohmann::json::array()}};
  if (task.name == "3_Broken") reply = {{"verdict", "error"}, {"reason", "the reference raised"}};
  return reference_probe_from_json(reply);
}

}  // namespace

TEST_CASE("bench: a degenerate problem is probed, stored marked, logged and left out of the metrics") {
  temp_dir t;
  for (const char* name : {"1_Clamp", "2_Scale", "3_Broken"}) {
    std::ofstream(t.path / "kernelbench" / "level2" / (std::string(name) + ".py")) << "# a problem\n";
    std::ofstream(t.path / "kernelbench" / "level2" / (std::string(name) + ".cu")) << "// its initial kernel\n";
  }
  bench_options o;
  o.kernelbench_dir = t.path / "kernelbench";
  o.levels = {2};
  o.out = t.path / "run";
  bench_hooks hooks;
  hooks.import = [](const kernelbench_import_options& io) {
    const auto name = fs::path(io.problem).stem().string();
    fs::create_directories(io.out_dir);
    std::ofstream(fs::path(io.out_dir) / "task.json")
        << nlohmann::json{{"name", name},
                          {"reference", {{"source", "def forward(x):\n    return x\n"}}},
                          {"inputs", {{{"name", "x"}, {"shape", {8}}}}}}
               .dump();
    return kernelbench_import_result{};
  };
  std::vector<std::string> probed, log;
  hooks.probe = [&](const task_spec& task) -> std::optional<reference_probe> {
    probed.push_back(task.name);
    return fake_probe(task);
  };
  // Every problem 10x faster than its reference: only the degenerate one's must not count.
  hooks.optimize = [](const task_spec&, const optimize::loop_options&, optimize::run_environment&) {
    optimize::optimize_result r;
    r.input_ms = 1;
    r.best_ms = 0.1;
    r.reference_ms = 1;
    r.stop_reason = {optimize::stop_kind::recorded, ""};
    return r;
  };
  hooks.log = [&](const std::string& line) { log.push_back(line); };

  const auto s = run_bench(o, hooks);
  CHECK(s.ran == 3);
  CHECK(probed == std::vector<std::string>{"1_Clamp", "2_Scale", "3_Broken"});
  const auto results = result_store(o.out).results();
  REQUIRE(results.size() == 3);
  std::map<std::string, problem_result> by_name;
  for (const auto& r : results) by_name[r.problem] = r;
  CHECK(by_name["1_Clamp"].degenerate == "degenerate: output constant over the declared inputs");
  CHECK(by_name["1_Clamp"].status == "ok");
  CHECK(by_name["1_Clamp"].valid);  // the loop ran as for any other problem
  CHECK(by_name["2_Scale"].degenerate.empty());
  CHECK(by_name["3_Broken"].degenerate.empty());  // not probed: not marked
  auto logged = [&](const std::string& needle) {
    for (const auto& l : log)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  };
  CHECK(logged("L2_1_Clamp: warning: degenerate task: the reference's output 0 is always 0"));
  CHECK(logged("L2_3_Broken: the reference was not probed for degeneracy: the reference raised"));
  CHECK_FALSE(logged("L2_2_Scale: warning"));

  const auto m = compute_metrics("run", results);
  CHECK(m.overall.problems == 3);
  CHECK(m.overall.degenerate == 1);
  CHECK(m.overall.valid == 2);
  CHECK(m.overall.eager.n == 2);
  CHECK(m.overall.eager.geomean == doctest::Approx(10.0));
}

TEST_CASE("bench: without a probe (replayed results) nothing is marked") {
  temp_dir t;
  std::ofstream(t.path / "kernelbench" / "level2" / "1_Clamp.py") << "# a problem\n";
  std::ofstream(t.path / "kernelbench" / "level2" / "1_Clamp.cu") << "// its initial kernel\n";
  bench_options o;
  o.kernelbench_dir = t.path / "kernelbench";
  o.levels = {2};
  o.out = t.path / "run";
  bench_hooks hooks;
  hooks.import = [](const kernelbench_import_options& io) {
    fs::create_directories(io.out_dir);
    std::ofstream(fs::path(io.out_dir) / "task.json")
        << R"({"name": "1_Clamp", "reference": {"source": "def forward(x):\n    return x\n"},
               "inputs": [{"name": "x", "shape": [8]}]})";
    return kernelbench_import_result{};
  };
  hooks.optimize = [](const task_spec&, const optimize::loop_options&, optimize::run_environment&) {
    optimize::optimize_result r;
    r.best_ms = 0.1;
    r.reference_ms = 1;
    return r;
  };
  hooks.probe = [](const task_spec&) -> std::optional<reference_probe> { return std::nullopt; };
  run_bench(o, hooks);
  const auto results = result_store(o.out).results();
  REQUIRE(results.size() == 1);
  CHECK(results[0].degenerate.empty());
}
