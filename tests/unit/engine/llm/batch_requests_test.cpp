// Batch request writers: ids by content, each distinct request once, the providers' shapes, and
// the ids the results readers then match.
#include "engine/llm/batch_requests.h"
#include "engine/llm/batch_results.h"

#include <doctest/doctest.h>

#include <regex>

using namespace kblaster::engine::llm;

namespace {

chat_request ask(const std::string& role, const std::string& text) {
  chat_request r;
  r.agent_role = role;
  r.system = "You write CUDA kernels.";
  r.messages.push_back({"user", text});
  return r;
}

}  // namespace

TEST_CASE("batch custom ids: by content, stable, within both providers' rules") {
  llm_config c;
  const auto a = batch_custom_id(c, ask("lowering", "vector_add, thread_coarsening"));
  CHECK(a == batch_custom_id(c, ask("lowering", "vector_add, thread_coarsening")));  // a resumed run's id
  CHECK(a != batch_custom_id(c, ask("lowering", "vector_add, loop_unrolling")));
  CHECK(a.rfind("lowering-", 0) == 0);
  auto other_model = c;
  other_model.model = "another-model";
  CHECK(a != batch_custom_id(other_model, ask("lowering", "vector_add, thread_coarsening")));
  const std::regex allowed("^[A-Za-z0-9_-]{1,64}$");
  CHECK(std::regex_match(a, allowed));
  CHECK(std::regex_match(batch_custom_id(c, ask("a role with spaces/and:punctuation " + std::string(80, 'x'), "t")), allowed));
  CHECK(batch_custom_id(c, ask("", "t")).rfind("request-", 0) == 0);
}

TEST_CASE("OpenAI batch input: one line per distinct request, answered through the results reader") {
  llm_config c;
  const std::vector<chat_request> asked = {ask("lowering", "one"), ask("repair", "two"), ask("lowering", "one")};
  const auto lines = openai_batch_lines(c, asked);
  REQUIRE(lines.size() == 2);  // the same prompt from two trajectories goes in once
  CHECK(lines[0]["method"] == "POST");
  CHECK(lines[0]["url"] == "/v1/chat/completions");
  CHECK(lines[0]["body"]["model"] == c.model);
  CHECK(lines[0]["body"]["messages"][0]["role"] == "system");
  CHECK(lines[0]["body"]["messages"][1]["content"] == "one");
  // The provider's output line for the first request is read back under the same id.
  const std::string id = lines[0]["custom_id"];
  auto out = nlohmann::json::parse(
      R"({"response": {"status_code": 200, "body": {"choices": [{"message": {"content": "done"}, "finish_reason": "stop"}]}}, "error": null})");
  out["custom_id"] = id;
  const auto r = read_openai_batch_results(out.dump() + "\n", {lines[0]["custom_id"], lines[1]["custom_id"]});
  REQUIRE(r.answers.count(id));
  CHECK(r.answers.at(id).response->text == "done");
}

TEST_CASE("Anthropic batch body: requests with params in the messages shape") {
  llm_config c;
  c.api = provider::anthropic;
  c.model = "claude-sonnet-4-5";
  const auto body = anthropic_batch_body(c, {ask("planner", "plan"), ask("planner", "plan")});
  REQUIRE(body["requests"].size() == 1);
  const auto& req = body["requests"][0];
  CHECK(req["custom_id"].get<std::string>().rfind("planner-", 0) == 0);
  CHECK(req["params"]["system"] == "You write CUDA kernels.");
  CHECK(req["params"]["messages"].size() == 1);
  CHECK(req["params"]["model"] == "claude-sonnet-4-5");
}
