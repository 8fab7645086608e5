// The bench driver and the import cache (engine/task/import_cache.h): the run's cache folder and
// stop reach the import, each result says whether the cache served it or how long the exporter
// took, the progress and the report say so, and an import cut short by a stop is not stored as a
// failure. The import is a stand-in (the cache itself is tested in tests/unit/engine/task/).
#include "engine/bench/metrics.h"
#include "engine/bench/report_markdown.h"
#include "engine/bench/runner.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stop_token>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::bench;

namespace {

struct temp_dir : kblaster::testing::temp_dir {
  temp_dir() : kblaster::testing::temp_dir("bench-import") {
    fs::create_directories(path / "kernelbench" / "level1");
    for (const char* name : {"1_Copy", "2_Scale"}) {
      std::ofstream(path / "kernelbench" / "level1" / (std::string(name) + ".py")) << "# a problem\n";
      std::ofstream(path / "kernelbench" / "level1" / (std::string(name) + ".cu")) << "// its initial kernel\n";
    }
  }
};

// An import that writes the task and says it came from the cache when the problem is 1_Copy.
kernelbench_import_result stand_in_import(const kernelbench_import_options& io) {
  const auto name = fs::path(io.problem).stem().string();
  fs::create_directories(io.out_dir);
  std::ofstream(fs::path(io.out_dir) / "task.json")
      << nlohmann::json{{"name", name},
                        {"reference", {{"source", "def forward(x):\n    return x\n"}}},
                        {"inputs", {{{"name", "x"}, {"shape", {8}}}}}}
             .dump();
  kernelbench_import_result r;
  r.cached = name == "1_Copy";
  r.export_seconds = r.cached ? 0 : 42.5;
  return r;
}

optimize::optimize_result a_loop(const task_spec&, const optimize::loop_options&, optimize::run_environment&) {
  optimize::optimize_result r;
  r.input_ms = 1;
  r.best_ms = 0.5;
  r.reference_ms = 1;
  r.stop_reason = {optimize::stop_kind::recorded, ""};
  return r;
}

bench_options options_in(const temp_dir& t) {
  bench_options o;
  o.kernelbench_dir = t.path / "kernelbench";
  o.levels = {1};
  o.out = t.path / "run";
  o.import_cache = t.path / "imports";
  return o;
}

}  // namespace

TEST_CASE("bench: each result says whether the import cache served it, and the progress and report say so") {
  temp_dir t;
  const auto o = options_in(t);
  std::vector<fs::path> caches;
  std::vector<std::string> log;
  bench_hooks hooks;
  hooks.import = [&](const kernelbench_import_options& io) {
    caches.push_back(io.cache_dir);
    return stand_in_import(io);
  };
  hooks.optimize = a_loop;
  hooks.log = [&](const std::string& line) { log.push_back(line); };
  CHECK(run_bench(o, hooks).ran == 2);
  CHECK(caches == std::vector<fs::path>{o.import_cache, o.import_cache});
  CHECK(std::find(log.begin(), log.end(), "L1_1_Copy: import: cached") != log.end());
  CHECK(std::find(log.begin(), log.end(), "L1_2_Scale: import: 42.5 s") != log.end());

  auto results = result_store(o.out).results();
  REQUIRE(results.size() == 2);
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.problem < b.problem; });
  CHECK(results[0].import_cached);
  CHECK_FALSE(results[0].import_seconds);
  CHECK_FALSE(results[1].import_cached);
  CHECK(results[1].import_seconds == doctest::Approx(42.5));
  const auto report = report_markdown({{"run", {}, results, compute_metrics("run", results)}});
  CHECK(report.find("Imports: 1 from the import cache, 1 exported (42.5 s).") != std::string::npos);
}

TEST_CASE("bench: an import cut short by the stop is not stored, so the next run imports it again") {
  temp_dir t;
  const auto o = options_in(t);
  std::stop_source stop;
  bench_hooks hooks;
  hooks.stop = stop.get_token();
  hooks.import = [&](const kernelbench_import_options& io) -> kernelbench_import_result {
    CHECK(io.stop.stop_possible());
    stop.request_stop();  // as Ctrl-C kills the exporter
    throw import_error("the exporter was killed by signal 9");
  };
  hooks.optimize = a_loop;
  const auto s = run_bench(o, hooks);
  CHECK(s.ran == 0);
  CHECK(s.failed == 0);
  CHECK(result_store(o.out).results().empty());
}
