// The state extractor over HTTP on fixture cassettes: JSON with trailing text is sent back and
// the retry confirms; a new state is described with valid names; a budget stops it cleanly.
#include "engine/agents/state_extractor.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;
using namespace kblaster::engine::agents;

TEST_CASE("state extractor: trailing text after the JSON is refused, the retry confirms") {
  llm_test::seeded_kb k;
  llm_test::served s("state_extractor_confirm.jsonl");
  const auto before = k.kb.summary().updates;
  auto r = extract_state(*s.client, k.kb, {llm_test::vadd_view(), "sm_90"});
  REQUIRE(r.ok());
  CHECK(r.value->decision == "confirm");
  CHECK(r.value->state == "memory_bandwidth_saturated");
  CHECK(r.value->primary_bottleneck == "memory_bound_dram");
  REQUIRE(r.trace.problems.size() == 1);
  CHECK(r.trace.problems[0].kind == problem_kind::trailing_text);
  CHECK(r.trace.calls == 2);
  // The retry told the model what was wrong, in the same conversation.
  REQUIRE(r.trace.messages.size() == 4);
  CHECK(r.trace.messages[2].content.find("text after the JSON object") != std::string::npos);
  // The prompt carried the evidence and the deterministic match, not the whole KB.
  const auto first = nlohmann::json::parse(s.server.requests().at(0).body);
  const std::string user = first["messages"][1]["content"];
  CHECK(user.find("Deterministic match: memory_bandwidth_saturated") != std::string::npos);
  CHECK(user.find("hopper_gemm_without_wgmma") == std::string::npos);  // another family: not sent
  CHECK(k.kb.summary().updates == before);  // the extractor never writes
  CHECK(s.client->usage().by_role().at("state_extractor").calls == 2);
}

TEST_CASE("state extractor: a newly discovered state is checked and convertible to a KB state") {
  llm_test::seeded_kb k;
  llm_test::served s("state_extractor_new.jsonl");
  auto r = extract_state(*s.client, k.kb, {llm_test::vadd_view(), "sm_90"});
  REQUIRE(r.ok());
  CHECK(r.value->decision == "new");
  CHECK(r.value->secondary == std::vector<std::string>{"atomic_contention", "uncoalesced_global_access"});
  const auto st = r.value->to_kb_state();
  CHECK(st.origin == "discovered");
  CHECK(st.criteria.size() == 2);
  k.kb.put_state(st, {"manual", "test", {}});
  CHECK(k.kb.find_state("dram_bound_atomic_histogram"));
}

TEST_CASE("state extractor: a spent budget ends the run cleanly without a request") {
  llm_test::seeded_kb k;
  kblaster::engine::llm::loopback_server server(kblaster::engine::llm::read_cassette(llm_test::cassette_path("state_extractor_confirm.jsonl")));
  auto c = llm_test::loopback_config(server);
  c.budget_tokens = 1000;  // the first answer costs 1320
  auto client = llm_test::http_client(c);
  auto r = extract_state(*client, k.kb, {llm_test::vadd_view(), "sm_90"});
  CHECK(!r.ok());
  CHECK(r.trace.status == agent_status::budget_exhausted);
  CHECK(r.trace.error.find("token budget spent") != std::string::npos);
  CHECK(server.requests().size() == 1);
}
