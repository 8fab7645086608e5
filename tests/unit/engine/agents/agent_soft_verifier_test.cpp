// The soft verifier over HTTP: a real shortcut is reported as a fail; a "pass" that lists a
// shortcut is inconsistent and sent back; the consistent pass is accepted.
#include "engine/agents/soft_verifier.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

using namespace kblaster::engine::agents;

TEST_CASE("soft verifier: fail with issues, then an inconsistent pass is refused") {
  llm_test::served s("soft_verifier.jsonl");
  verifier_input in{llm_test::vadd_source(), llm_test::vadd_source(), "launch_vadd", "vectorized_memory_access"};
  auto fail = soft_verify(*s.client, in);
  REQUIRE(fail.ok());
  CHECK(!fail.value->pass);
  REQUIRE(fail.value->issues.size() == 2);
  CHECK(fail.value->issues[1].kind == "forbidden_shortcut");
  auto pass = soft_verify(*s.client, in);
  REQUIRE(pass.ok());
  CHECK(pass.value->pass);
  CHECK(pass.trace.problems.at(0).message.find("lists a forbidden_shortcut") != std::string::npos);
  const std::string user = nlohmann::json::parse(s.server.requests().at(0).body)["messages"][1]["content"];
  CHECK(user.find("Reference:") != std::string::npos);
  CHECK(user.find("Candidate:") != std::string::npos);
}
