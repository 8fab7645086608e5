// The HTTP client against the loopback server: both wire formats, retries on 429/5xx with
// Retry-After, timeouts, budgets, the concurrency bound, and keys kept out of every output.
#include "engine/llm/http_transport.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/loopback_server.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace kblaster::engine::llm;
using llm_test::http_client;
using llm_test::loopback_config;

namespace {

cassette_entry answer(const std::string& text, std::int64_t pt = 100, std::int64_t ct = 20) {
  cassette_entry e;
  e.response.text = text;
  e.response.finish_reason = "stop";
  e.response.model = "served-model";
  e.response.usage = {pt, ct, false};
  return e;
}

std::vector<cassette_entry> answers(int n) {
  std::vector<cassette_entry> v;
  for (int i = 0; i < n; ++i) v.push_back(answer("answer " + std::to_string(i)));
  return v;
}

injected_fault fault(int status, std::string retry_after = "", int delay_ms = 0,
                     std::string body = R"({"error":{"message":"injected failure"}})") {
  injected_fault f;
  f.status = status;
  f.retry_after = std::move(retry_after);
  f.delay_ms = delay_ms;
  f.body = std::move(body);
  return f;
}

chat_request ask(const std::string& role = "planner") {
  chat_request r;
  r.agent_role = role;
  r.system = "system text";
  r.messages = {{"user", "hello"}};
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("llm client: OpenAI-compatible exchange over HTTP, usage per call and per role") {
  loopback_server server(answers(3));
  auto client = http_client(loopback_config(server), "sk-test-abcdef");
  auto a = client->complete(ask("planner"));
  CHECK(a.text == "answer 0");
  CHECK(a.model == "served-model");
  CHECK(a.usage.prompt_tokens == 100);
  client->complete(ask("lowering"));
  client->complete(ask("lowering"));
  const auto roles = client->usage().by_role();
  CHECK(roles.at("planner").calls == 1);
  CHECK(roles.at("lowering").calls == 2);
  CHECK(roles.at("lowering").total_tokens() == 240);
  CHECK(client->usage().totals().total_tokens() == 360);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[0].path == "/v1/chat/completions");
  CHECK(reqs[0].headers.at("authorization") == "Bearer sk-test-abcdef");
  const auto body = nlohmann::json::parse(reqs[0].body);
  CHECK(body["model"] == "loopback-model");
  CHECK(body["messages"][0]["role"] == "system");
  CHECK(body["messages"][1]["content"] == "hello");
}

TEST_CASE("llm client: Anthropic messages format") {
  loopback_server server(answers(1));
  auto c = loopback_config(server);
  c.api = provider::anthropic;
  auto client = http_client(c, "sk-ant-test-123456");
  auto a = client->complete(ask());
  CHECK(a.text == "answer 0");
  CHECK(a.usage.completion_tokens == 20);
  const auto req = server.requests().at(0);
  CHECK(req.path == "/v1/messages");
  CHECK(req.headers.at("x-api-key") == "sk-ant-test-123456");
  CHECK(req.headers.at("anthropic-version") == "2023-06-01");
  const auto body = nlohmann::json::parse(req.body);
  CHECK(body["system"] == "system text");
  CHECK(body["messages"].size() == 1);
}

TEST_CASE("llm client: 500s and 429s are retried with back-off; success counts the tries") {
  loopback_server server(answers(1));
  server.inject(fault(500));
  server.inject(fault(502));
  server.inject(fault(429));
  std::vector<std::string> logs;
  std::mutex m;
  auto client = http_client(loopback_config(server), "sk-test-0000",
                            [&](const std::string& l) { std::lock_guard g(m); logs.push_back(l); });
  auto a = client->complete(ask());
  CHECK(a.text == "answer 0");
  CHECK(a.attempts == 4);
  CHECK(server.requests().size() == 4);
  CHECK(logs.size() == 3);
  CHECK(logs[0].find("HTTP 500") != std::string::npos);
}

TEST_CASE("llm client: Retry-After is honoured (seconds)") {
  loopback_server server(answers(1));
  server.inject(fault(429, "1"));
  auto client = http_client(loopback_config(server));
  const auto t = std::chrono::steady_clock::now();
  auto a = client->complete(ask());
  const double waited = seconds_since(t);
  CHECK(a.attempts == 2);
  CHECK(waited >= 1.0);
  CHECK(waited < 2.5);
}

TEST_CASE("llm client: a Retry-After beyond the limit fails at once instead of waiting") {
  loopback_server server(answers(1));
  server.inject(fault(503, "3600"));
  auto client = http_client(loopback_config(server));
  const auto t = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(client->complete(ask()), doctest::Contains("retry after 3600"), llm_error);
  CHECK(seconds_since(t) < 1.0);
}

TEST_CASE("llm client: persistent 5xx exhausts the retries with a clear error") {
  loopback_server server(answers(1));
  for (int i = 0; i < 4; ++i) server.inject(fault(503));
  auto client = http_client(loopback_config(server));
  try {
    client->complete(ask());
    FAIL("no error");
  } catch (const llm_error& e) {
    CHECK(e.kind() == error_kind::retries_exhausted);
    CHECK(std::string(e.what()).find("after 4 tries") != std::string::npos);
    CHECK(e.http_status() == 503);
  }
  CHECK(server.requests().size() == 4);
  CHECK(client->usage().totals().calls == 0);
}

TEST_CASE("llm client: a slow endpoint times out, is retried, and a timeout is reported as such") {
  loopback_server server(answers(2));
  auto c = loopback_config(server);
  c.timeout_s = 0.3;
  c.max_retries = 1;
  SUBCASE("slow once, then fast") {
    server.inject(fault(200, "", 1000, ""));  // the fault's body is never read: the client gave up
    auto client = http_client(c);
    auto a = client->complete(ask());
    CHECK(a.attempts == 2);
    CHECK(a.text == "answer 0");
  }
  SUBCASE("always slow") {
    server.set_answer_delay_ms(1000);
    auto client = http_client(c);
    const auto t = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(client->complete(ask()), doctest::Contains("timed out"), llm_error);
    CHECK(seconds_since(t) < 2.0);
  }
}

TEST_CASE("llm client: 401 is not retried and 404 is an HTTP error") {
  loopback_server server(answers(1));
  server.inject(fault(401, "", 0, R"({"error":{"message":"Incorrect API key provided"}})"));
  auto client = http_client(loopback_config(server));
  try {
    client->complete(ask());
    FAIL("no error");
  } catch (const llm_error& e) {
    CHECK(e.kind() == error_kind::auth);
    CHECK(std::string(e.what()).find("KBLASTER_TEST_KEY") != std::string::npos);
  }
  CHECK(server.requests().size() == 1);
  server.inject(fault(404, "", 0, R"({"error":{"message":"model not found"}})"));
  CHECK_THROWS_WITH_AS(client->complete(ask()), doctest::Contains("model not found"), llm_error);
}

TEST_CASE("llm client: a spent token budget stops the job before the next request is sent") {
  loopback_server server(answers(5));
  auto c = loopback_config(server);
  c.budget_tokens = 200;  // each answer costs 120
  auto client = http_client(c);
  client->complete(ask());
  client->complete(ask());  // 240 >= 200 after this one
  try {
    client->complete(ask());
    FAIL("no error");
  } catch (const llm_error& e) {
    CHECK(e.kind() == error_kind::budget_exceeded);
    CHECK(std::string(e.what()).find("240 of 200") != std::string::npos);
  }
  CHECK(server.requests().size() == 2);
}

TEST_CASE("llm client: a cost budget uses the configured prices") {
  loopback_server server(answers(5));
  auto c = loopback_config(server);
  c.usd_per_mtok_in = 2500;  // $0.25 per 100 prompt tokens
  c.usd_per_mtok_out = 0;
  c.budget_usd = 0.5;
  auto client = http_client(c);
  client->complete(ask());
  client->complete(ask());
  CHECK(client->usage().totals().usd == doctest::Approx(0.5));
  CHECK_THROWS_AS(client->complete(ask()), llm_error);
  CHECK(server.requests().size() == 2);
}

TEST_CASE("llm client: concurrent calls are bounded by max_concurrent") {
  loopback_server server(answers(8));
  server.set_answer_delay_ms(150);
  auto c = loopback_config(server);
  c.max_concurrent = 2;
  auto client = http_client(c);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (!client->complete(ask()).text.empty()) ++ok;
    });
  for (auto& th : threads) th.join();
  CHECK(ok == 8);
  CHECK(client->peak_in_flight() == 2);
  CHECK(server.peak_concurrent() == 2);
  CHECK(seconds_since(t) >= 0.55);  // 8 calls, 2 at a time, 150 ms each
}

TEST_CASE("llm client: unbounded enough, calls really run concurrently") {
  loopback_server server(answers(6));
  server.set_answer_delay_ms(200);
  auto c = loopback_config(server);
  c.max_concurrent = 6;
  auto client = http_client(c);
  std::vector<std::thread> threads;
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) threads.emplace_back([&] { client->complete(ask()); });
  for (auto& th : threads) th.join();
  CHECK(server.peak_concurrent() >= 4);
  CHECK(seconds_since(t) < 1.0);
}

TEST_CASE("llm client: the key never appears in logs, errors or recordings") {
  const std::string key = "sk-kbtest-SECRET-5f2b9c0d8e7a6b5c";
  llm_test::temp_dir dir;
  std::vector<cassette_entry> script = answers(1);
  // A model echoing the key in its answer (e.g. from a prompt that leaked it) is redacted too.
  script[0].response.text = "your key is " + key;
  loopback_server server(script);
  // Error bodies that echo the key, as some proxies do.
  server.inject(fault(500, "", 0, R"({"error":{"message":"upstream rejected Authorization: Bearer )" + key + R"("}})"));
  std::vector<std::string> logs;
  auto client = http_client(loopback_config(server), key, [&](const std::string& l) { logs.push_back(l); });
  client->record_to(dir / "rec.jsonl", "test recording");
  client->complete(ask());
  server.inject(fault(401, "", 0, R"({"error":{"message":"Incorrect API key provided: )" + key + R"("}})"));
  std::string error;
  try {
    client->complete(ask());
  } catch (const llm_error& e) {
    error = e.what();
  }
  REQUIRE(!error.empty());
  REQUIRE(!logs.empty());
  // The key was really sent ...
  CHECK(server.requests().front().headers.at("authorization") == "Bearer " + key);
  // ... and is nowhere in what we wrote.
  CHECK(error.find(key) == std::string::npos);
  CHECK(error.find("[redacted]") != std::string::npos);
  for (const auto& l : logs) CHECK(l.find(key) == std::string::npos);
  const std::string recording = llm_test::read_text(dir / "rec.jsonl");
  CHECK(recording.find("your key is") != std::string::npos);
  CHECK(recording.find(key) == std::string::npos);
  CHECK(recording.find("SECRET") == std::string::npos);
  CHECK(client->backend().describe().find(key) == std::string::npos);
}

TEST_CASE("llm client: recordings replay by fingerprint and in order") {
  llm_test::temp_dir dir;
  {
    loopback_server server(answers(2));
    auto client = http_client(loopback_config(server));
    client->record_to(dir / "run.jsonl", "test");
    auto r1 = ask("planner");
    auto r2 = ask("lowering");
    client->complete(r1);
    client->complete(r2);
  }
  const auto entries = read_cassette(dir / "run.jsonl");
  REQUIRE(entries.size() == 2);
  CHECK(entries[1].role == "lowering");
  CHECK(entries[0].request["system"] == "system text");
  // By fingerprint: the lowering request finds its answer although it comes first.
  llm_client replay(std::make_unique<replay_backend>(entries, replay_mode::by_fingerprint), {});
  CHECK(replay.complete(ask("lowering")).text == "answer 1");
  CHECK(replay.complete(ask("planner")).text == "answer 0");
  CHECK_THROWS_WITH_AS(replay.complete(ask("planner")), doctest::Contains("no recorded answer"), llm_error);
  // In order, a role mismatch is named.
  llm_client ordered(std::make_unique<replay_backend>(entries, replay_mode::in_order), {});
  CHECK_THROWS_WITH_AS(ordered.complete(ask("soft_verifier")), doctest::Contains("is for planner"), llm_error);
  // The same cassette over HTTP by fingerprint (the client sends its role).
  loopback_server server(entries, replay_mode::by_fingerprint);
  auto client = http_client(loopback_config(server));
  CHECK(client->complete(ask("lowering")).text == "answer 1");
}

TEST_CASE("llm transport: Retry-After forms and a refused connection") {
  CHECK(parse_retry_after("2") == 2);
  CHECK(parse_retry_after("") < 0);
  CHECK(parse_retry_after("soon") < 0);
  CHECK(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0);  // in the past: now
  llm_config c;
  c.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  c.max_retries = 0;
  auto client = http_client(c);
  CHECK_THROWS_WITH_AS(client->complete(ask()), doctest::Contains("no answer"), llm_error);
}
