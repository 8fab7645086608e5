// The learning curve's bookkeeping (engine/bench/learning_curve.h), with figures worked out by
// hand: the attempts in the loop's order, the 90 % rule, budgets, the arms' totals and the goal's
// ratio, disjoint sets, coverage, and a KB's statistics kept apart by architecture through an
// export relabelled and imported.
#include "engine/bench/learning_curve.h"
#include "engine/bench/problem_set.h"
#include "kb/knowledge_base.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <fstream>

namespace fs = std::filesystem;
using namespace kblaster::engine::bench;
namespace kb = kblaster::kb;

namespace {

// A fresh folder for each test.
struct temp_dir : kblaster::testing::temp_dir {
  temp_dir() : kblaster::testing::temp_dir("learning") {}
};

// Attempts from speedups; 0 stands for a candidate that failed (no speedup).
std::vector<attempt_point> seq(std::initializer_list<double> speedups, const std::string& state = "s") {
  std::vector<attempt_point> out;
  for (double v : speedups) out.push_back({"t", state, v > 0 ? std::optional<double>(v) : std::nullopt});
  return out;
}

kb::attempt kb_attempt(std::int64_t id, int iteration, int trajectory, int step, const std::string& hash, bool correct,
                       double ms) {
  kb::attempt a;
  a.id = id;
  a.iteration = iteration;
  a.trajectory = "run-abc/i" + std::to_string(iteration) + "/t" + std::to_string(trajectory);
  a.step = step;
  a.technique = "tech" + std::to_string(id);
  a.state_before = "state" + std::to_string(step);
  a.code_hash = hash;
  a.correct = correct;
  a.runtime_ms = ms;
  return a;
}

const run_count& run_of(const task_learning& t, const std::string& arm, std::uint64_t seed) {
  for (const auto& r : t.runs)
    if (r.arm == arm && r.seed == seed) return r;
  FAIL("no run " << arm << " s" << seed << " of " << t.task);
  throw 0;
}

}  // namespace

TEST_CASE("attempts are taken in the loop's order, each kernel once, with their speedup over the input") {
  // Committed out of order (iteration 1 before 0, trajectory 10 before 2: a number, not text),
  // one kernel met twice, one that failed.
  std::vector<kb::attempt> mine{kb_attempt(7, 1, 0, 0, "h5", true, 0.5), kb_attempt(3, 0, 10, 0, "h4", true, 4.0),
                                kb_attempt(1, 0, 2, 1, "h2", false, 1.0), kb_attempt(0, 0, 2, 0, "h1", true, 2.0),
                                kb_attempt(5, 0, 10, 1, "h1", true, 2.0)};
  const auto a = attempts_in_loop_order(mine, 2.0);
  REQUIRE(a.size() == 4);
  CHECK(a[0].technique == "tech0");  // i0 t2 step 0
  CHECK(a[0].speedup == doctest::Approx(1.0));
  CHECK(a[1].technique == "tech1");  // i0 t2 step 1, failed: no speedup
  CHECK(!a[1].speedup);
  CHECK(a[1].state == "state1");
  CHECK(a[2].technique == "tech3");  // i0 t10 step 0; t10's step 1 is h1 again: not counted
  CHECK(a[2].speedup == doctest::Approx(0.5));
  CHECK(a[3].technique == "tech7");  // iteration 1
  CHECK(a[3].speedup == doctest::Approx(4.0));
  CHECK(attempts_in_loop_order(mine, std::nullopt)[3].speedup == std::nullopt);
}

TEST_CASE("the 90 % rule: the first attempt at or above the target, within the budget") {
  const auto a = seq({0, 1.2, 1.5, 1.4});
  CHECK(attempts_to_reach(a, 1.35, 0) == 3);
  CHECK(attempts_to_reach(a, 1.5, 0) == 3);  // at the target counts
  CHECK(attempts_to_reach(a, 1.51, 0) == std::nullopt);
  CHECK(attempts_to_reach(a, 1.35, 2) == std::nullopt);  // the budget cuts it
  CHECK(attempts_to_reach(a, 0.95, 0) == 0);  // the input reaches it
  CHECK(best_so_far(a, 6) == std::vector<double>{1, 1, 1.2, 1.5, 1.5, 1.5, 1.5});
  CHECK(best_so_far(seq({0.8}), 2) == std::vector<double>{1, 1, 1});  // slower than the input: the input stays best
}

TEST_CASE("the arms' totals: targets over every run, unreached counted as budget + 1, the warm / cold ratio") {
  std::vector<held_out_run> runs{
      // Task A: best 2.0 (warm s2), target 1.8.
      {"A", "cold", 1, seq({1.1, 0, 1.3, 1.9})},  // 4
      {"A", "cold", 2, seq({1.2, 1.2, 1.2, 1.2})},  // unreached within 4: 5
      {"A", "warm", 1, seq({1.85})},              // 1
      {"A", "warm", 2, seq({1.5, 2.0})},          // 2
      // Task B: best 1.05 (under 1/0.9): the input reaches the target, not counted.
      {"B", "cold", 1, seq({1.05})}, {"B", "cold", 2, seq({1.0})},
      {"B", "warm", 1, seq({0.9})}, {"B", "warm", 2, seq({1.01})},
      // Task C: no warm s2 run (it failed): incomplete, not counted.
      {"C", "cold", 1, seq({3.0})}, {"C", "cold", 2, seq({3.0})}, {"C", "warm", 1, seq({3.0})},
      // Task D: 3.0 found at the 6th attempt, past the budget of 4: best within the budget is 1.5.
      {"D", "cold", 1, seq({1.0, 1.5, 1.0, 1.0, 1.0, 3.0})}, {"D", "cold", 2, seq({1.5})},
      {"D", "warm", 1, seq({1.5})}, {"D", "warm", 2, seq({0, 1.4})}};
  const auto s = summarize_learning(runs, 4, {{"warm", {"s"}}, {"cold", {}}});
  CHECK(s.arms == std::vector<std::string>{"cold", "warm"});
  CHECK(s.seeds == std::vector<std::uint64_t>{1, 2});
  REQUIRE(s.tasks.size() == 4);
  const auto& a = s.tasks[0];
  CHECK(a.best == doctest::Approx(2.0));
  CHECK(a.target == doctest::Approx(1.8));
  CHECK(a.informative);
  CHECK(a.complete);
  CHECK(run_of(a, "cold", 1).to_target == 4);
  CHECK(run_of(a, "cold", 2).to_target == std::nullopt);
  CHECK(run_of(a, "cold", 2).counted == 5);
  CHECK(run_of(a, "warm", 2).to_target == 2);
  CHECK(!s.tasks[1].informative);
  CHECK(s.tasks[2].informative);
  CHECK(!s.tasks[2].complete);
  const auto& d = s.tasks[3];
  CHECK(d.best == doctest::Approx(1.5));  // the 3.0 is past the budget
  CHECK(run_of(d, "cold", 1).to_target == 2);
  CHECK(run_of(d, "cold", 2).to_target == 1);
  CHECK(run_of(d, "warm", 2).to_target == 2);  // 1.4 >= 1.35

  REQUIRE(s.arm_totals.size() == 2);
  const auto& cold = s.arm_totals[0];
  const auto& warm = s.arm_totals[1];
  // Counted: A and D. cold: 4, 5, 2, 1; warm: 1, 2, 1, 2.
  CHECK(cold.runs == 4);
  CHECK(cold.reached == 3);
  CHECK(cold.mean_attempts == doctest::Approx(3.0));
  CHECK(cold.median_attempts == doctest::Approx(3.0));
  CHECK(warm.mean_attempts == doctest::Approx(1.5));
  CHECK(warm.median_attempts == doctest::Approx(1.5));
  REQUIRE(s.warm_over_cold);
  CHECK(*s.warm_over_cold == doctest::Approx(0.5));
  // The curve: geometric mean of the four counted runs' best after n attempts.
  REQUIRE(warm.curve.size() == 5);
  CHECK(warm.curve[0] == doctest::Approx(1.0));
  CHECK(warm.curve[1] == doctest::Approx(std::pow(1.85 * 1.5 * 1.5 * 1.0, 0.25)));
  CHECK(warm.curve[4] == doctest::Approx(std::pow(1.85 * 2.0 * 1.5 * 1.4, 0.25)));
  // Per task, per arm: the geometric mean over seeds.
  CHECK(a.curves.at("warm")[1] == doctest::Approx(std::sqrt(1.85 * 1.5)));

  // Coverage: every attempt's state is "s"; warm's KB covers it, cold's none.
  CHECK(s.coverage.at("warm").covered == std::vector<std::string>{"s"});
  CHECK(s.coverage.at("warm").attempts_covered == s.coverage.at("warm").attempts);
  CHECK(s.coverage.at("cold").covered.empty());
  CHECK(s.coverage.at("cold").attempts == 4 + 4 + 1 + 1 + 1 + 1 + 4 + 1);  // cut at the budget
}

TEST_CASE("no budget: the longest run sets it; no warm arm: no ratio") {
  const auto s = summarize_learning({{"A", "cold", 1, seq({1.0, 2.0, 1.0})}, {"A", "foreign", 1, seq({2.0})}}, 0, {});
  CHECK(s.budget == 3);
  CHECK(!s.warm_over_cold);
  CHECK(s.arm_totals[1].mean_attempts == doctest::Approx(1.0));
}

TEST_CASE("the training and held-out sets must be disjoint") {
  const std::vector<problem_ref> train{{1, 19, "19_ReLU", "a/19_ReLU.py"}, {1, 0, "vector_add", "a/vector_add", true}};
  CHECK_NOTHROW(require_disjoint(train, {{1, 20, "20_LeakyReLU", "a/20_LeakyReLU.py"}, {2, 19, "19_ReLU", "b/19_ReLU.py"}}));
  try {
    require_disjoint(train, {{1, 20, "20_LeakyReLU", "x"}, {1, 0, "vector_add", "x", true}});
    FAIL("overlap accepted");
  } catch (const problem_set_error& e) {
    CHECK(std::string(e.what()).find("L1_vector_add") != std::string::npos);
  }
}

TEST_CASE("a task folder in a level folder is a problem of its own") {
  temp_dir d;
  fs::create_directories(d.path / "level1" / "vector_add");
  std::ofstream(d.path / "level1" / "vector_add" / "task.json") << "{}";
  fs::create_directories(d.path / "level1" / "not_a_task");
  std::ofstream(d.path / "level1" / "19_ReLU.py") << "";
  const auto ps = find_problems(d.path, 1);
  REQUIRE(ps.size() == 2);
  CHECK(ps[0].name == "vector_add");
  CHECK(ps[0].task_folder);
  CHECK(ps[1].name == "19_ReLU");
  CHECK(!ps[1].task_folder);
  CHECK(select_problems(ps, "vector").size() == 1);
}

TEST_CASE("a KB learnt on one architecture, relabelled and imported, keeps each architecture's statistics apart") {
  temp_dir d;
  auto learnt = kb::knowledge_base::open(d.path / "learnt.sqlite");
  const auto state = learnt.states().front().name;
  const auto technique = learnt.optimizations(state).front().technique;
  kb::attempt a;
  a.task = "t";
  a.trajectory = "run-x/i0/t0";
  a.state_before = state;
  a.technique = technique;
  a.correct = true;
  a.measured_speedup = 1.5;
  a.runtime_ms = 1;
  a.arch = "sm_90";
  a.code_hash = "h1";
  learnt.record_attempt(a);
  a.code_hash = "h2";
  learnt.record_attempt(a);
  const auto doc = learnt.export_json();
  const auto rows = statistics_by_arch(doc);
  CHECK(rows.at("sm_90").rows == 1);
  CHECK(rows.at("sm_90").attempts == 2);
  CHECK(rows.at("all").attempts == 2);
  CHECK(states_with_statistics(doc, "sm_90") == std::set<std::string>{state});

  const auto foreign = relabel_architecture(doc, "sm_80");
  CHECK(!statistics_by_arch(foreign).count("sm_90"));
  CHECK(statistics_by_arch(foreign).at("sm_80").attempts == 2);
  CHECK(statistics_by_arch(foreign).at("all").attempts == 2);  // the pooled row stays
  // Imported as bench --warm-start does (into an unseeded KB), used on sm_90: no statistics of its
  // own there, so the pooled row is what the selection reads.
  kb::open_options no_seed;
  no_seed.seed = false;
  auto here = kb::knowledge_base::open(d.path / "here.sqlite", no_seed);
  here.import_json(foreign, kb::update_cause{"import", "test", {}});
  auto pick = [&](const std::string& arch) {
    for (const auto& o : here.optimizations(state, arch))
      if (o.technique == technique) return o;
    FAIL("technique missing");
    throw 0;
  };
  CHECK(pick("sm_90").arch == kb::all_archs);
  CHECK(pick("sm_90").statistics.attempts == 2);
  CHECK(pick("sm_80").arch == "sm_80");
  // A run here adds sm_90 statistics beside the foreign ones, which stay as imported.
  a.code_hash = "h3";
  a.measured_speedup = 0.5;
  here.record_attempt(a);
  const auto after = statistics_by_arch(here.export_json());
  CHECK(after.at("sm_80").attempts == 2);
  CHECK(after.at("sm_90").attempts == 1);
  CHECK(after.at("all").attempts == 3);
  CHECK(pick("sm_90").arch == "sm_90");
  CHECK(pick("sm_90").statistics.attempts == 1);
  CHECK(pick("sm_80").statistics.attempts == 2);

  // Two architectures' statistics cannot be moved under one label.
  a.arch = "sm_80";
  a.code_hash = "h4";
  learnt.record_attempt(a);
  CHECK_THROWS_AS(relabel_architecture(learnt.export_json(), "sm_70"), std::invalid_argument);
}

TEST_CASE("a result's attempts survive the store's JSON") {
  problem_result r;
  r.problem = "19_ReLU";
  r.level = 1;
  r.arch = "sm_90";
  r.attempts = {{"block_size_tuning", "memory_bandwidth_saturated", 1.25}, {"read_only_cache", "", std::nullopt}};
  const auto back = problem_result_from_json(to_json(r));
  REQUIRE(back.attempts.size() == 2);
  CHECK(back.attempts[0].technique == "block_size_tuning");
  CHECK(back.attempts[0].state == "memory_bandwidth_saturated");
  CHECK(back.attempts[0].speedup == doctest::Approx(1.25));
  CHECK(!back.attempts[1].speedup);
  CHECK(back.arch == "sm_90");
}

TEST_CASE("the experiment's arms and seeds decide what a complete task is") {
  const std::vector<held_out_run> runs{{"A", "cold", 1, seq({2.0})}};
  CHECK(summarize_learning(runs, 4, {}).tasks[0].complete);
  const auto s = summarize_learning(runs, 4, {}, {"cold", "warm"}, {1, 2});
  CHECK(s.arms == std::vector<std::string>{"cold", "warm"});
  CHECK(!s.tasks[0].complete);
  CHECK(s.arm_totals[0].runs == 0);
}
