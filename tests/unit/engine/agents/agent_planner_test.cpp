// The planner over HTTP: a refusal is answered with the task restated; the fenced JSON answer
// is accepted; a technique outside the catalogue carries its description.
#include "engine/agents/planner.h"
#include "engine/state/profile_summary.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

using namespace kblaster::engine::agents;

TEST_CASE("planner: refusal, then candidates with predictions and one-line rationales") {
  llm_test::seeded_kb k;
  llm_test::served s("planner.jsonl");
  planner_input in{"matmul_without_tensor_cores", kblaster::engine::summarize_for_prompt(llm_test::vadd_view()), "sm_90", 4};
  auto r = plan_techniques(*s.client, k.kb, in);
  REQUIRE(r.ok());
  REQUIRE(r.value->size() == 3);
  CHECK(r.trace.problems.at(0).kind == problem_kind::refusal);
  CHECK((*r.value)[0].technique == "shared_memory_tiling");
  CHECK((*r.value)[0].predicted_speedup == doctest::Approx(2.4));
  CHECK(!(*r.value)[0].is_new);
  CHECK((*r.value)[2].is_new);
  CHECK((*r.value)[2].category == "latency");
  // The prompt lists the catalogue by name only (no descriptions) and the state's known entries.
  const std::string user = nlohmann::json::parse(s.server.requests().at(0).body)["messages"][1]["content"];
  CHECK(user.find("memory_coalescing (memory)") != std::string::npos);
  CHECK(user.find("technique | prior | predicted") != std::string::npos);
}

TEST_CASE("planner: an unknown state is a clear error before any call") {
  llm_test::seeded_kb k;
  llm_test::served s("planner.jsonl");
  CHECK_THROWS_WITH(plan_techniques(*s.client, k.kb, {"no_such_state", "", "", 3}), doctest::Contains("no_such_state"));
  CHECK(s.server.requests().empty());
}
