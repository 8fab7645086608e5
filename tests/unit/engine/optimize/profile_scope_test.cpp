// What the loop asks ncu for: the input kernel with the editor's sections (the first selection
// reads its state and the summary the model is shown; a save's profile of the same kernel, taken
// with those sections, serves it), every later version a step or an iteration starts from with
// the state's counters alone (profile_scope::state_counters: 13 replay passes against 36; the
// next selection reads only its state).
#include "engine/evaluate/harness_evaluator.h"
#include "engine/optimize/optimize.h"
#include "tests/unit/engine/llm/llm_test_support.h"
#include "tests/unit/engine/optimize/deferred_rounds.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace kblaster::engine;
using namespace kblaster::engine::optimize;

TEST_CASE("the input is profiled with the sections, the versions steps start from with the state's counters") {
  const llm_test::temp_dir dir;
  const auto task = load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add");
  const auto input = llm_test::read_text(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add/kernel.cu");
  loop_test::feature_evaluator eval;
  llm::llm_client model(std::make_unique<loop_test::answering_backend>(loop_test::improving_model(input)), {});
  run_environment env;
  env.kb_path = dir / "kb.sqlite";
  env.eval = &eval;
  env.model = &model;
  env.out_dir = dir / "run";
  loop_options o;
  o.breadth = 2;
  o.depth = 3;
  o.iterations = 2;
  o.seed = 1;
  const auto result = run_optimization(task, o, env);
  const auto input_hash = source_hash(task.name, input);
  REQUIRE(eval.scopes.count(input_hash));
  CHECK(eval.scopes.at(input_hash) == profile_scope::sections);
  int counters = 0;
  for (const auto& [hash, scope] : eval.scopes)
    if (hash != input_hash) {
      CAPTURE(hash);
      CHECK(scope == profile_scope::state_counters);
      ++counters;
    }
  // Every step of the stand-in model improves, so each non-last step's best is profiled.
  CHECK(counters >= 2);
  CHECK(result.best_speedup > 1.0);
}

TEST_CASE("what ncu is asked for in each scope") {
  // The counters scope is metrics alone: one section among them (ncu_options starts with the
  // editor's twelve) would bring their 36 replay passes back.
  const auto counters = profile_ncu_options(profile_scope::state_counters);
  CHECK(counters.sections.empty());
  for (const auto& m : state_ncu_metrics()) {
    CAPTURE(m);
    CHECK(std::find(counters.metrics.begin(), counters.metrics.end(), m) != counters.metrics.end());
  }
  for (const auto& m : default_ncu_metrics()) {
    CAPTURE(m);
    CHECK(std::find(counters.metrics.begin(), counters.metrics.end(), m) != counters.metrics.end());
  }
  const auto sections = profile_ncu_options(profile_scope::sections);
  CHECK(sections.sections == loop_ncu_sections());
  CHECK(sections.metrics == default_ncu_metrics());
  // Both profile only the runner's range, which holds the candidate's one call.
  CHECK(counters.nvtx_include == "kb_candidate/");
  CHECK(sections.nvtx_include == "kb_candidate/");
  // The command built from them: no --section for the counters.
  const auto argv = build_ncu_command("ncu", counters, {});
  CHECK(std::find(argv.begin(), argv.end(), "--section") == argv.end());
}
