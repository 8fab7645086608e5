// A model answering through a batch interface (`--batch files:DIR`): each round may take hours,
// so an iteration of depth T asks in at most T + 2 rounds (issue 36), whatever the model says, and
// reaches what the same model answering at once reaches. The stand-in model makes every step's
// rewrite a new best (each needs the soft verifier) and every textual gradient find a departure
// (each needs its analysis and update): the most rounds a run can need without a repair.
#include "engine/optimize/optimize.h"
#include "tests/unit/engine/llm/llm_test_support.h"
#include "tests/unit/engine/optimize/deferred_rounds.h"

#include <doctest/doctest.h>

namespace {
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
using llm_test::temp_dir;
using loop_test::feature_evaluator;

task_spec vector_add_task() { return load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add"); }

std::string vector_add_kernel() {
  return llm_test::read_text(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add/kernel.cu");
}

// The run's KB attempts as comparable rows (ids, run ids and timestamps left out).
std::multiset<std::string> attempt_rows(const std::filesystem::path& kb_path) {
  std::multiset<std::string> rows;
  for (const auto& a : kblaster::kb::knowledge_base::open(kb_path).attempts(0))
    rows.insert(a.trajectory.substr(a.trajectory.find('/')) + " " + std::to_string(a.step) + " " + a.technique + " " +
                a.code_hash + " " + a.state_before + " -> " + a.state_after + (a.correct ? " correct" : " incorrect"));
  return rows;
}

// What one set of rows has that the other lacks, for a failure's message.
std::string difference(const std::multiset<std::string>& a, const std::multiset<std::string>& b) {
  std::string out;
  for (const auto& r : a)
    if (!b.count(r)) out += "\n  only deferred: " + r;
  for (const auto& r : b)
    if (!a.count(r)) out += "\n  only synchronous: " + r;
  return out;
}

// The same run with the stand-in answering at once.
optimize_result synchronous_run(const temp_dir& dir, const loop_options& o, const loop_test::answerer& answer) {
  feature_evaluator eval;
  llm::llm_client model(std::make_unique<loop_test::answering_backend>(answer), {});
  run_environment env;
  env.kb_path = dir / "sync.sqlite";
  env.eval = &eval;
  env.model = &model;
  env.out_dir = dir / "sync";
  return run_optimization(vector_add_task(), o, env);
}

loop_options paper_size(bool mechanical_first) {
  loop_options o;
  o.breadth = 8;
  o.depth = 4;
  o.iterations = 2;
  o.seed = 1;
  o.mechanical_first = mechanical_first;
  return o;
}

}  // namespace

TEST_CASE("a deferred run of breadth 8, depth 4, 2 iterations asks in at most depth + 2 rounds an iteration") {
  for (const bool mechanical_first : {false, true}) {
    CAPTURE(mechanical_first);
    const auto o = paper_size(mechanical_first);
    const auto model = loop_test::improving_model(vector_add_kernel());
    temp_dir dir;
    feature_evaluator eval;
    const auto deferred = loop_test::run_in_rounds(vector_add_task(), o, dir.path() / "deferred", eval, model);
    REQUIRE(deferred.result.stop_reason == stop_kind::finished);
    MESSAGE(deferred.rounds << " rounds for " << o.iterations << " iterations of depth " << o.depth);
    CHECK(deferred.rounds <= (o.depth + 2) * o.iterations);
    // Every step the model took was a new best: with no mechanical step, as many as the run has.
    if (!mechanical_first)
      CHECK(deferred.result.best_source.find(std::string(feature_evaluator::gain_marker) + " 4\n") != std::string::npos);
    // What the model answering at once reaches, the deferred run reaches.
    const auto sync = synchronous_run(dir, o, model);
    REQUIRE(sync.stop_reason == stop_kind::finished);
    CHECK(deferred.result.best_source == sync.best_source);
    CHECK(deferred.result.tokens == sync.tokens);
    CHECK(deferred.result.candidates == sync.candidates);
    const auto deferred_rows = attempt_rows(dir.path() / "deferred" / "kb.sqlite"), sync_rows = attempt_rows(dir / "sync.sqlite");
    CHECK_MESSAGE(deferred_rows == sync_rows, difference(deferred_rows, sync_rows));
    // Each iteration's textual gradient edited the KB.
    for (const auto& it : deferred.result.report["iterations"]) CHECK(it["gradient"]["status"] == "ok");
  }
}

TEST_CASE("a deferred run whose soft verifier rejects a candidate reaches the synchronous run") {
  // The second rewrite of every trajectory is rejected: the step the run went on with, assuming
  // the verdict, is asked again from the version before it.
  auto o = paper_size(false);
  o.breadth = 2;
  const auto model = loop_test::improving_model(vector_add_kernel(), [](int gains) { return gains == 2; });
  temp_dir dir;
  feature_evaluator eval;
  const auto deferred = loop_test::run_in_rounds(vector_add_task(), o, dir.path() / "deferred", eval, model);
  REQUIRE(deferred.result.stop_reason == stop_kind::finished);
  const auto sync = synchronous_run(dir, o, model);
  REQUIRE(sync.stop_reason == stop_kind::finished);
  CHECK(deferred.result.best_source == sync.best_source);
  CHECK(deferred.result.tokens == sync.tokens);
  const auto deferred_rows = attempt_rows(dir.path() / "deferred" / "kb.sqlite"), sync_rows = attempt_rows(dir / "sync.sqlite");
  CHECK_MESSAGE(deferred_rows == sync_rows, difference(deferred_rows, sync_rows));
  bool rejected = false;
  for (const auto& it : deferred.result.report["iterations"])
    for (const auto& tr : it["trajectories"])
      for (const auto& st : tr["steps"])
        for (const auto& c : st["candidates"])
          if (c.contains("soft_verifier") && !c["soft_verifier"]["pass"].get<bool>()) rejected = true;
  CHECK(rejected);
}
