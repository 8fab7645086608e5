// Batch results readers: OpenAI Batch output/error lines and Anthropic Message Batches results,
// in the shapes the providers document, read against the requests a run sent.
#include "engine/llm/batch_results.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace kblaster::engine::llm;
using json = nlohmann::json;

namespace {

std::string openai_ok(const std::string& id, const std::string& text) {
  return json{{"id", "batch_req_" + id},
              {"custom_id", id},
              {"response",
               {{"status_code", 200},
                {"request_id", "req_" + id},
                {"body",
                 {{"model", "gpt-4o-2024-08-06"},
                  {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
                  {"usage", {{"prompt_tokens", 120}, {"completion_tokens", 30}}}}}}},
              {"error", nullptr}}
      .dump();
}

std::string anthropic(const std::string& id, const json& result) { return json{{"custom_id", id}, {"result", result}}.dump(); }

json anthropic_message(const std::string& text) {
  return {{"type", "succeeded"},
          {"message",
           {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"model", "claude-sonnet-4-5"},
            {"content", {{{"type", "text"}, {"text", text}}}}, {"stop_reason", "end_turn"},
            {"usage", {{"input_tokens", 200}, {"output_tokens", 40}}}}}};
}

}  // namespace

TEST_CASE("OpenAI batch output: answers in any order, with their usage") {
  const std::string file = openai_ok("r2", "second") + "\n" + openai_ok("r1", "first") + "\n";
  const auto r = read_openai_batch_results(file, {"r1", "r2", "r3"});
  REQUIRE(r.answers.size() == 2);
  CHECK(r.answers.at("r1").outcome == batch_outcome::succeeded);
  CHECK(r.answers.at("r1").response->text == "first");
  CHECK(r.answers.at("r2").response->text == "second");
  CHECK(r.answers.at("r2").response->usage.prompt_tokens == 120);
  CHECK(r.answers.at("r2").response->finish_reason == "stop");
  CHECK_FALSE(r.answers.count("r3"));  // not answered yet: pending, not failed
  CHECK(r.unknown_ids.empty());
  CHECK(r.unreadable.empty());
}

TEST_CASE("OpenAI batch error file: errors, expiry and cancellation are told apart") {
  const std::string file =
      json{{"custom_id", "r1"}, {"response", nullptr}, {"error", {{"code", "batch_expired"}, {"message", "This request could not be executed before the completion window expired."}}}}.dump() + "\n" +
      json{{"custom_id", "r2"}, {"response", nullptr}, {"error", {{"code", "batch_cancelled"}, {"message", "cancelled"}}}}.dump() + "\n" +
      json{{"custom_id", "r3"}, {"response", {{"status_code", 400}, {"body", {{"error", {{"message", "max_tokens is too large"}}}}}}}, {"error", nullptr}}.dump() + "\n";
  const auto r = read_openai_batch_results(file, {"r1", "r2", "r3"});
  CHECK(r.answers.at("r1").outcome == batch_outcome::expired);
  CHECK(r.answers.at("r2").outcome == batch_outcome::canceled);
  CHECK(r.answers.at("r3").outcome == batch_outcome::errored);
  CHECK(r.answers.at("r3").error.find("HTTP 400") == 0);
  CHECK(r.answers.at("r3").error.find("max_tokens is too large") != std::string::npos);
}

TEST_CASE("answers the run did not send are ignored and listed; duplicates keep the first success") {
  const std::string file = openai_ok("other-run-7", "not ours") + "\n" + openai_ok("r1", "first") + "\n" +
                           openai_ok("r1", "again") + "\n" + openai_ok("other-run-7", "still not ours") + "\n";
  const auto r = read_openai_batch_results(file, {"r1"});
  REQUIRE(r.answers.size() == 1);
  CHECK(r.answers.at("r1").response->text == "first");
  CHECK(r.duplicates == 1);
  CHECK(r.unknown_ids == std::vector<std::string>{"other-run-7"});
}

TEST_CASE("a success after a failure replaces it; merging an error file keeps successes") {
  auto out = read_openai_batch_results(openai_ok("r1", "ok") + "\n", {"r1", "r2"});
  auto err = read_openai_batch_results(
      json{{"custom_id", "r1"}, {"error", {{"code", "server_error"}, {"message", "boom"}}}}.dump() + "\n" +
          json{{"custom_id", "r2"}, {"error", {{"code", "server_error"}, {"message", "boom"}}}}.dump() + "\n",
      {"r1", "r2"});
  out.merge(std::move(err));
  CHECK(out.answers.at("r1").outcome == batch_outcome::succeeded);
  CHECK(out.answers.at("r2").outcome == batch_outcome::errored);
  CHECK(out.answers.at("r2").error == "boom");
  CHECK(out.duplicates == 1);
  // A retried request's later success replaces its error.
  out.merge(read_openai_batch_results(openai_ok("r2", "retried") + "\n", {"r2"}));
  CHECK(out.answers.at("r2").outcome == batch_outcome::succeeded);
  CHECK(out.answers.at("r2").response->text == "retried");
}

TEST_CASE("Anthropic results: succeeded, errored, expired, canceled, in any order") {
  const std::string file =
      anthropic("b", json{{"type", "errored"}, {"error", {{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "prompt is too long"}}}}}}) + "\n" +
      anthropic("a", anthropic_message("hello")) + "\n" + anthropic("c", json{{"type", "expired"}}) + "\n" +
      anthropic("d", json{{"type", "canceled"}}) + "\n";
  const auto r = read_anthropic_batch_results(file, {"a", "b", "c", "d"});
  CHECK(r.answers.at("a").response->text == "hello");
  CHECK(r.answers.at("a").response->usage.completion_tokens == 40);
  CHECK(r.answers.at("b").outcome == batch_outcome::errored);
  CHECK(r.answers.at("b").error == "prompt is too long");
  CHECK(r.answers.at("c").outcome == batch_outcome::expired);
  CHECK(r.answers.at("d").outcome == batch_outcome::canceled);
}

TEST_CASE("lines that are no answer are listed with their line number; the rest is read") {
  const std::string file = "not json\n\n" + json{{"custom_id", 5}}.dump() + "\n" + json{{"id", "x"}}.dump() + "\n" +
                           json{{"custom_id", "r1"}, {"response", {{"status_code", "200"}}}}.dump() + "\n" +
                           json{{"custom_id", "r2"}, {"response", {{"status_code", 200}, {"body", {{"choices", 3}}}}}}.dump() +
                           "\n" + openai_ok("r3", "fine");
  const auto r = read_openai_batch_results(file, {"r1", "r2", "r3"});
  REQUIRE(r.unreadable.size() == 4);
  CHECK(r.unreadable[0] == "line 1: not a JSON object");
  CHECK(r.unreadable[1] == "line 3: no custom_id");
  CHECK(r.unreadable[2] == "line 4: no custom_id");
  CHECK(r.unreadable[3] == "line 5: a response without an integer status_code");
  // A 2xx body that is not a chat completion is that request's error, not the file's.
  CHECK(r.answers.at("r2").outcome == batch_outcome::errored);
  CHECK(r.answers.at("r3").response->text == "fine");
  const auto a = read_anthropic_batch_results(anthropic("x", json{{"type", "bogus"}}) + "\n", {"x"});
  CHECK(a.answers.empty());
  CHECK(a.unreadable == std::vector<std::string>{"line 1: a result of unknown type 'bogus'"});
}

TEST_CASE("a token count that is no count (a float, negative, beyond int64) reads as 0, the answer kept") {
  // Found by fuzz_batch_results: 4e21 converted to an integer was undefined behaviour.
  auto line = json::parse(openai_ok("r1", "text"));
  auto& usage = line["response"]["body"]["usage"];
  usage["prompt_tokens"] = 4.00333e21;
  usage["completion_tokens"] = -3;
  const auto r = read_openai_batch_results(line.dump() + "\n", {"r1"});
  REQUIRE(r.answers.count("r1"));
  CHECK(r.answers.at("r1").response->text == "text");
  CHECK(r.answers.at("r1").response->usage.prompt_tokens == 0);
  CHECK(r.answers.at("r1").response->usage.completion_tokens == 0);
  usage["prompt_tokens"] = 18446744073709551615ull;
  usage["completion_tokens"] = 30;
  const auto big = read_openai_batch_results(line.dump() + "\n", {"r1"});
  CHECK(big.answers.at("r1").response->usage.prompt_tokens == 0);
  CHECK(big.answers.at("r1").response->usage.completion_tokens == 30);
}
