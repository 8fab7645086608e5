// The MAIC-RL loop's own logic, with a feature-priced evaluator standing in for the GPU (the
// loop's behaviour on real recorded GPU results is tested in tests/optimize): every candidate
// recorded as a KB attempt, the best version kept, resume equivalence after a stop, budgets,
// cancellation, the model path with the answer book, parallel model calls, and bad input.
#include "engine/llm/cassette.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/run_report.h"
#include "tests/unit/engine/llm/llm_test_support.h"
#include "tests/unit/engine/optimize/feature_evaluator.h"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

namespace {
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
using llm_test::temp_dir;
using loop_test::feature_evaluator;
namespace fs = std::filesystem;

task_spec vector_add_task() { return load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add"); }

// A run in `dir` (its KB and output folder) evaluated by `eval`.
run_environment environment_in(const temp_dir& dir, evaluator& eval) {
  run_environment env;
  env.kb_path = dir / "kb.sqlite";
  env.eval = &eval;
  env.out_dir = dir / "run";
  return env;
}

loop_options small_options() {
  loop_options o;
  o.breadth = 2;
  o.depth = 2;
  o.iterations = 2;
  o.seed = 7;
  return o;
}

// The KB's attempts of a run as comparable tuples (ids and timestamps left out).
// Only the trajectories whose name contains `only`, when given ("/i0/": the first iteration).
std::multiset<std::tuple<std::string, int, std::string, std::string, std::string, std::string, bool>> attempt_set(
    const fs::path& kb_path, const std::string& only = "") {
  auto kb = kblaster::kb::knowledge_base::open(kb_path);
  std::multiset<std::tuple<std::string, int, std::string, std::string, std::string, std::string, bool>> out;
  for (const auto& a : kb.attempts(0))
    if (a.trajectory.find(only) != std::string::npos)
      out.insert({a.trajectory, a.step, a.technique, a.code_hash, a.state_before, a.state_after, a.correct});
  return out;
}

}  // namespace

TEST_CASE("optimize: the mechanical tier alone improves vector_add and records every candidate in the KB") {
  temp_dir dir;
  feature_evaluator eval;
  auto env = environment_in(dir, eval);
  std::vector<progress_event> events;
  env.progress = [&](const progress_event& e) { events.push_back(e); };
  const auto r = run_optimization(vector_add_task(), small_options(), env);
  CHECK(r.stop_reason == stop_kind::finished);
  CHECK(r.best_speedup > 1.05);
  CHECK(r.best_source != r.input_source);
  CHECK(r.diff.rfind("--- a/kernel.cu\n+++ b/kernel.cu\n@@ ", 0) == 0);
  CHECK(r.candidates >= 2);
  REQUIRE_FALSE(r.attempt_ids.empty());
  auto kb = kblaster::kb::knowledge_base::open(env.kb_path);
  const auto attempts = kb.attempts(0);
  CHECK(attempts.size() == r.attempt_ids.size());
  for (const auto& a : attempts) {
    CHECK(a.trajectory.rfind(r.run_id + "/i", 0) == 0);
    CHECK(a.state_before != "");
    CHECK(a.arch == "sm_90");
    CHECK(a.predicted_speedup.has_value());
    if (a.correct) CHECK(a.measured_speedup.has_value());
  }
  // The numeric update happened: the techniques tried have statistics now.
  const auto s = kb.summary();
  CHECK(s.attempts == static_cast<std::int64_t>(attempts.size()));
  CHECK(s.transitions > 0);
  // Progress: a baseline, steps with non-decreasing counts, and done.
  REQUIRE(events.size() >= 3);
  CHECK(events.front().phase == "baseline");
  CHECK(events.back().phase == "done");
  int last = 0;
  for (const auto& e : events) {
    CHECK(e.steps_done >= last);
    last = e.steps_done;
    CHECK(e.steps_total == 8);
  }
  // A step that tries something says so when it starts (the user sees what runs), and its
  // "done" event follows with the same position.
  std::set<std::string> announced;
  int started = 0;
  for (const auto& e : events) {
    const auto at = std::to_string(e.iteration) + "/" + std::to_string(e.trajectory) + "/" + std::to_string(e.step);
    if (e.phase == "step_started") {
      ++started;
      CHECK(e.message.find(": trying ") != std::string::npos);
      announced.insert(at);
    }
    if (e.phase == "step" && e.message.find(" in ") != std::string::npos && e.message.find("nothing") == std::string::npos)
      CHECK_MESSAGE(announced.count(at), e.message);
  }
  CHECK(started >= 2);
  // A step's new best is profiled for the state it reached (the next step chooses by it, the KB
  // learns the transition to it: the last step's too), and the seconds under ncu say so.
  int profiling = 0;
  for (const auto& e : events)
    if (e.phase == "profile") {
      ++profiling;
      CHECK(e.step < small_options().depth);
      CHECK(e.message.find(": profiling its new best (") != std::string::npos);
      CHECK(e.message.find("x over the step's start) for the state it reached") != std::string::npos);
    }
  CHECK(profiling >= 1);
  for (const char* f : {"best.cu", "best.diff", "report.md", "report.json", "manifest.json", "steps.jsonl"})
    CHECK(fs::exists(env.out_dir / f));
  const auto report = r.report;
  CHECK(report["tier"] == "mechanical only");
  CHECK(report["iterations"].size() == 2);
  CHECK(r.report_markdown.find("**" + attempts.back().technique + "**") != std::string::npos);
}

TEST_CASE("optimize: only the input and each step's new best are profiled; --profile-all profiles every correct candidate") {
  for (const bool all : {false, true}) {
    CAPTURE(all);
    temp_dir dir;
    feature_evaluator eval;
    auto env = environment_in(dir, eval);
    auto o = small_options();
    o.profile_all = all;
    o.breadth = 3;  // a trajectory whose last step finds a best that no step starts from
    o.policy = "weighted";  // whose draws give that trajectory here (profiling does not depend on the policy)
    const auto r = run_optimization(vector_add_task(), o, env);
    REQUIRE(r.stop_reason == stop_kind::finished);
    const std::string input = r.report["iterations"][0]["trajectories"][0]["steps"][0]["start"];
    // `starts`: the versions a step started from; `unread`: a last step's new best that no step
    // started from (nothing chose by its state, but the KB learns where the step led);
    // `new_bests`: every step's result that differs from its start.
    std::set<std::string> starts, last_results, correct, profiled, new_bests;
    for (const auto& it : r.report["iterations"])
      for (const auto& tr : it["trajectories"])
        for (const auto& st : tr["steps"]) {
          if (st["start"] != input) starts.insert(st["start"].get<std::string>());
          if (st["step"] == o.depth - 1 && st["result"] != st["start"]) last_results.insert(st["result"].get<std::string>());
          if (st["result"] != st["start"]) new_bests.insert(st["result"].get<std::string>());
          for (const auto& c : st["candidates"]) {
            const auto hash = c["hash"].get<std::string>();
            if (c["correct"].get<bool>()) correct.insert(hash);
            // A state after exactly when the step profiled it, and the profile's seconds with it.
            const bool has_state = !c["state_after"].get<std::string>().empty();
            if (has_state) profiled.insert(hash);
            CHECK(c["gpu_seconds"].get<double>() == doctest::Approx(has_state ? 9.25 : 0.25));
          }
        }
    std::set<std::string> unread;
    for (const auto& h : last_results)
      if (!starts.count(h)) unread.insert(h);
    REQUIRE_FALSE(starts.empty());
    REQUIRE_FALSE(unread.empty());
    int profiles = 0;  // the candidates the report's costs count as profiled
    if (all) {
      CHECK(profiled == correct);
    } else {
      // Every step's new best, the last steps' too (the state each reached); an iteration's
      // start is one of them, profiled already.
      CHECK(profiled == new_bests);
      for (const auto& h : unread) CHECK(profiled.count(h));
      CHECK(profiled.size() < correct.size());
      // The input too; nothing else, each once.
      CHECK(eval.profiles.load() == static_cast<int>(new_bests.size()) + 1);
      profiles = static_cast<int>(new_bests.size()) + 1;
    }
    CHECK(eval.prepared.load() > 0);
    // The report summarises the same: candidates, how many profiled, medians per phase.
    // The input apart: measured and profiled once, not among the candidates.
    const auto& cost = r.report["cost_per_candidate"];
    CHECK(cost["candidates"] == r.candidate_phases.size());
    REQUIRE(r.input_phases);
    CHECK(r.input_phases->profile == doctest::Approx(9.0));
    CHECK(r.report["input_cost"]["device_seconds"].get<double>() == doctest::Approx(9.25));
    CHECK_FALSE(r.report["input_cost"]["profile_reused"].get<bool>());
    CHECK(cost["median_device_seconds_with_input"].get<double>() >= cost["median_device_seconds"].get<double>());
    if (!all) CHECK(cost["profiled"] == profiles - 1);
    CHECK(r.report_markdown.find("| the input kernel | 9.25 s of device time, once (") != std::string::npos);
    CHECK(cost["median_phase_seconds"]["time"] == doctest::Approx(0.2));
    CHECK(r.report_markdown.find("| per candidate after the input | median ") != std::string::npos);
    // Device time counts each candidate's measurement and each profile once (0.25 s and 9 s here).
    CHECK(r.gpu_seconds == doctest::Approx(0.25 * r.candidates + 9.0 * eval.profiles.load()));
  }
}

TEST_CASE("optimize: a candidate is timed against its step's start, the reference timed with the input only") {
  temp_dir dir;
  feature_evaluator eval;
  auto env = environment_in(dir, eval);
  const auto r = run_optimization(vector_add_task(), small_options(), env);
  REQUIRE(r.stop_reason == stop_kind::finished);
  REQUIRE(r.input_ms);
  std::map<std::string, double> runtime;  // per version hash
  std::string input_hash;
  for (const auto& it : r.report["iterations"])
    for (const auto& tr : it["trajectories"])
      for (const auto& st : tr["steps"]) {
        if (it["iteration"] == 0 && st["step"] == 0) input_hash = st["start"].get<std::string>();
        for (const auto& c : st["candidates"])
          if (c.contains("runtime_ms")) runtime[c["hash"].get<std::string>()] = c["runtime_ms"].get<double>();
      }
  REQUIRE_FALSE(input_hash.empty());
  runtime[input_hash] = *r.input_ms;
  CHECK_FALSE(eval.beats.at(input_hash).has_value());
  // The input is timed against the reference; every candidate is given that figure instead.
  CHECK_FALSE(eval.references.at(input_hash).has_value());
  REQUIRE(r.reference_ms);
  int checked = 0;
  for (const auto& it : r.report["iterations"])
    for (const auto& tr : it["trajectories"])
      for (const auto& st : tr["steps"])
        for (const auto& c : st["candidates"]) {
          const auto beat = eval.beats.at(c["hash"].get<std::string>());
          REQUIRE(beat.has_value());
          CHECK(*beat == doctest::Approx(runtime.at(st["start"].get<std::string>())));
          const auto given = eval.references.at(c["hash"].get<std::string>());
          REQUIRE(given.has_value());
          CHECK(*given == doctest::Approx(*r.reference_ms));
          ++checked;
        }
  CHECK(checked >= 4);
  // The report says how a candidate cut short was timed (none is here: every variant the
  // feature-priced evaluator sees keeps its start's features, so one is marked by hand).
  CHECK(r.report_markdown.find("(timed until clearly slower)") == std::string::npos);
  auto report = r.report;
  nlohmann::json* marked = nullptr;
  for (auto& it : report["iterations"])
    for (auto& tr : it["trajectories"])
      for (auto& st : tr["steps"])
        for (auto& c : st["candidates"])
          if (!marked && c.value("correct", false)) marked = &c;
  REQUIRE(marked);
  (*marked)["timed_until_slower"] = true;
  CHECK(render_run_report(report).find("(timed until clearly slower)") != std::string::npos);
}

TEST_CASE("optimize: a run stopped midway and resumed ends with the same KB as an uninterrupted one") {
  temp_dir dir;
  feature_evaluator eval;
  const auto task = vector_add_task();
  run_environment whole;
  whole.kb_path = dir / "whole.sqlite";
  whole.eval = &eval;
  whole.out_dir = dir / "whole";
  const auto a = run_optimization(task, small_options(), whole);

  feature_evaluator eval2;
  run_environment cut;
  cut.kb_path = dir / "cut.sqlite";
  cut.eval = &eval2;
  cut.out_dir = dir / "cut";
  std::stop_source stop;
  cut.stop = stop.get_token();
  int steps = 0;
  // Stopped in the second iteration (2 trajectories of 2 steps each), after its second step.
  cut.progress = [&](const progress_event& e) {
    if (e.phase == "step" && ++steps == 6) stop.request_stop();
  };
  const auto first = run_optimization(task, small_options(), cut);
  CHECK(first.stop_reason == stop_kind::cancelled);
  // The KB after the stop holds the whole first iteration and nothing of the second: its steps
  // wait in the checkpoint until it is whole, since committing them now would change the
  // statistics the rest of the iteration chooses by.
  const auto whole_first = attempt_set(whole.kb_path, "/i0/");
  REQUIRE_FALSE(whole_first.empty());
  CHECK(attempt_set(cut.kb_path) == whole_first);
  CHECK(kblaster::kb::knowledge_base::open(cut.kb_path).summary().attempts == static_cast<std::int64_t>(first.attempt_ids.size()));
  CHECK(first.attempt_ids.size() < a.attempt_ids.size());

  feature_evaluator eval3;
  cut.eval = &eval3;
  cut.stop = {};
  cut.progress = {};
  const auto second = run_optimization(task, small_options(), cut);
  CHECK(second.stop_reason == stop_kind::finished);
  CHECK(second.run_id == a.run_id);
  CHECK(second.best_source == a.best_source);
  CHECK(attempt_set(cut.kb_path) == attempt_set(whole.kb_path));
  // Resuming did not start over: it measured less than the whole run (a step cut short by the
  // stop is redone whole, so its candidates may be measured twice).
  CHECK(eval3.calls < eval.calls);
  CHECK(eval2.calls + eval3.calls >= eval.calls);
  // Its totals count both processes' wall time and every candidate's device time (issue 50).
  CHECK(first.wall_seconds > 0);
  CHECK(second.wall_seconds > first.wall_seconds);
  CHECK(second.report["totals"]["wall_seconds"].get<double>() == doctest::Approx(second.wall_seconds));
  CHECK(second.gpu_seconds >= first.gpu_seconds);
}

TEST_CASE("optimize: budgets stop the run cleanly") {
  temp_dir dir;
  feature_evaluator eval;
  auto env = environment_in(dir, eval);
  auto o = small_options();
  o.limits.candidates = 2;
  const auto r = run_optimization(vector_add_task(), o, env);
  CHECK(r.stop_reason == stop_kind::budget_candidates);
  // The budget is checked between steps: each trajectory running at the time (2) finishes its
  // step (up to 4 variants), so the run may overrun it by that much, never more.
  CHECK(r.candidates <= 2 + 2 * 4);
  CHECK(kblaster::kb::knowledge_base::open(env.kb_path).summary().attempts == static_cast<std::int64_t>(r.attempt_ids.size()));

  temp_dir dir2;
  run_environment env2 = env;
  env2.kb_path = dir2 / "kb.sqlite";
  env2.out_dir = dir2 / "run";
  auto o2 = small_options();
  o2.limits.gpu_seconds = 0.5;
  CHECK(run_optimization(vector_add_task(), o2, env2).stop_reason == stop_kind::budget_gpu_seconds);

  // The same command with a larger budget resumes the run: what the budget stop committed is not
  // recorded again, and a variant both trajectories tried counts once in its iteration.
  o.limits.candidates = 0;
  const auto resumed = run_optimization(vector_add_task(), o, env);
  CHECK(resumed.stop_reason == stop_kind::finished);
  CHECK(resumed.run_id == r.run_id);
  std::set<std::tuple<std::string, std::string, std::string, std::string>> variants;
  for (const auto& at : kblaster::kb::knowledge_base::open(env.kb_path).attempts(0)) {
    const auto iteration = at.trajectory.substr(0, at.trajectory.rfind('/'));
    CHECK_MESSAGE(variants.insert({iteration, at.state_before, at.technique, at.code_hash}).second,
                  at.trajectory << " step " << at.step << ": " << at.technique << " recorded twice");
  }
  CHECK(variants.size() == resumed.attempt_ids.size());
}

TEST_CASE("optimize: with the answer book as model, lowering, soft verification and the gradient run") {
  temp_dir dir;
  feature_evaluator eval;
  auto entries = llm::read_cassette(std::string(KBLASTER_SOURCE_DIR) + "/tests/optimize/answer_book.jsonl");
  llm::llm_client model(std::make_unique<llm::replay_backend>(entries, llm::replay_mode::by_content, "answer book"), {});
  run_environment env;
  env.kb_path = dir / "kb.sqlite";
  env.eval = &eval;
  env.model = &model;
  env.out_dir = dir / "run";
  auto o = small_options();
  o.mechanical_first = false;  // every step goes to the model
  const auto r = run_optimization(vector_add_task(), o, env);
  CHECK(r.stop_reason == stop_kind::finished);
  CHECK(r.tokens > 0);
  CHECK(r.best_source.find("float4") != std::string::npos);  // the answer book's kernel won
  CHECK(r.best_speedup > 1.3);
  bool lowering = false, verified = false;
  for (const auto& it : r.report["iterations"]) {
    CHECK(it.contains("gradient"));
    for (const auto& tr : it["trajectories"])
      for (const auto& s : tr["steps"]) {
        if (s["tier"] == "llm") lowering = true;
        for (const auto& c : s["candidates"])
          if (c.contains("soft_verifier")) verified = true;
      }
  }
  CHECK(lowering);
  CHECK(verified);
  const auto usage = model.usage().totals();
  CHECK(usage.total_tokens() == r.tokens);
}

TEST_CASE("optimize: unusable options and inputs are refused with a reason") {
  temp_dir dir;
  feature_evaluator eval;
  auto env = environment_in(dir, eval);
  auto o = small_options();
  o.breadth = 0;
  CHECK_THROWS_WITH_AS(run_optimization(vector_add_task(), o, env), doctest::Contains("breadth"), std::invalid_argument);
  o = small_options();
  o.policy = "random";
  CHECK_THROWS_AS(run_optimization(vector_add_task(), o, env), std::invalid_argument);
  // An input that does not compile cannot be a baseline.
  std::ofstream(dir / "bad.cu") << "__global__ void k() {}\n";
  env.input = dir / "bad.cu";
  env.out_dir = dir / "bad-run";
  CHECK_THROWS_WITH_AS(run_optimization(vector_add_task(), small_options(), env), doctest::Contains("does not compile"),
                       evaluation_error);
  // A run directory holding another run is not overwritten.
  env.input.clear();
  env.out_dir = dir / "run2";
  run_optimization(vector_add_task(), small_options(), env);
  auto other = small_options();
  other.seed = 8;
  CHECK_THROWS_WITH_AS(run_optimization(vector_add_task(), other, env), doctest::Contains("seed"), std::invalid_argument);
}
