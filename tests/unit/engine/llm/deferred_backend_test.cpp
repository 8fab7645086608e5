// The files:DIR provider: a question waits until its answer is in a results file; each round's
// questions are handed over once, in OpenAI's batch input format; failed answers are asked
// again up to a limit, refusals count at once; answers to questions never asked are ignored.
#include "engine/llm/batch_requests.h"
#include "engine/llm/deferred_backend.h"
#include "support/files.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <chrono>
#include <sstream>
#include <stop_token>
#include <thread>
#include <string>
#include <vector>

using namespace kblaster::engine::llm;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct batch_folder {
  fs::path dir = fs::temp_directory_path() / ("kblaster-deferred-test-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  batch_folder() { fs::remove_all(dir); }
  ~batch_folder() { fs::remove_all(dir); }
  void write(const std::string& name, const std::vector<json>& lines) const {
    std::string text;
    for (const auto& l : lines) text += l.dump() + "\n";
    kblaster::support::write_file_atomically(dir / name, text);
  }
};

chat_request question(const std::string& text) {
  chat_request r;
  r.agent_role = "lowering";
  r.system = "You write CUDA.";
  r.messages = {{"user", text}};
  return r;
}

json ok(const std::string& id, const std::string& text) {
  return {{"custom_id", id},
          {"response",
           {{"status_code", 200},
            {"body",
             {{"model", "m"},
              {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
              {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}}}},
          {"error", nullptr}};
}

json failed(const std::string& id, int status) {
  return {{"custom_id", id}, {"response", {{"status_code", status}, {"body", {{"error", {{"message", "no"}}}}}}}, {"error", nullptr}};
}

std::vector<std::string> ids_in(const fs::path& file) {
  std::vector<std::string> ids;
  std::istringstream in(kblaster::support::read_file(file));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ids.push_back(json::parse(line)["custom_id"].get<std::string>());
  return ids;
}

}  // namespace

TEST_CASE("a question waits, is handed over once, and is answered from a results file") {
  batch_folder f;
  llm_config c;
  std::vector<std::string> heard;
  files_backend b(c, f.dir, 2, [&](const std::string& l) { heard.push_back(l); });
  const auto q = question("make it faster");
  const auto id = batch_custom_id(c, q);
  CHECK_THROWS_AS(b.send(q), answer_pending);
  CHECK_THROWS_AS(b.send(q), answer_pending);  // asked twice, handed over once
  auto h = b.hand_over();
  CHECK(h.written == 1);
  CHECK(fs::path(h.where).filename() == "requests-1.jsonl");
  REQUIRE(fs::exists(f.dir / "requests-1.jsonl"));
  CHECK(ids_in(f.dir / "requests-1.jsonl") == std::vector<std::string>{id});
  const auto line = json::parse(kblaster::support::read_file(f.dir / "requests-1.jsonl"));
  CHECK(line["method"] == "POST");
  CHECK(line["url"] == "/v1/chat/completions");
  CHECK(line["body"]["messages"][1]["content"] == "make it faster");

  SUBCASE("asked again before an answer came (a resumed run): nothing is handed over twice") {
    files_backend resumed(c, f.dir);
    CHECK_THROWS_AS(resumed.send(q), answer_pending);
    h = resumed.hand_over();
    CHECK(h.written == 0);
    CHECK(h.awaiting == 1);
    CHECK_FALSE(fs::exists(f.dir / "requests-2.jsonl"));
  }
  SUBCASE("the answer, among answers to questions never asked, in another order") {
    f.write("out.results.jsonl", {ok("lowering-ffffffffffffffff", "not ours"), ok(id, "the kernel")});
    CHECK(b.poll());
    const auto a = b.send(q);
    CHECK(a.text == "the kernel");
    CHECK(a.usage.prompt_tokens == 10);
    REQUIRE_FALSE(heard.empty());
    CHECK(heard.front().find("did not send, ignored") != std::string::npos);
    CHECK(b.hand_over().written == 0);  // nothing waits any more
  }
  SUBCASE("a server error is asked again in the next round, up to the limit, then it is the model's failure") {
    for (int round = 1; round <= 3; ++round) {
      f.write("round" + std::to_string(round) + ".results.jsonl", {failed(id, 500)});
      b.poll();
      if (round < 3) {
        CHECK_THROWS_AS(b.send(q), answer_pending);
        h = b.hand_over();
        CHECK(h.written == 1);
        CHECK(fs::exists(f.dir / ("requests-" + std::to_string(round + 1) + ".jsonl")));
      } else {
        CHECK_THROWS_WITH_AS(b.send(q), doctest::Contains("answered with an error 3 time(s)"), llm_error);
      }
    }
  }
  SUBCASE("a refusal (HTTP 400) is the model's failure at once") {
    f.write("r.results.jsonl", {failed(id, 400)});
    b.poll();
    CHECK_THROWS_WITH_AS(b.send(q), doctest::Contains("was refused"), llm_error);
    CHECK(b.hand_over().written == 0);
  }
}

// The CI hang of optimize.deferred: the round's hand-over reads the folder (and, with a provider,
// collects the jobs that ended), so the answers to everything waiting can arrive in the hand-over
// itself. Nothing is then written or awaited, no later look can bring more, and --wait must resume
// at once instead of looking forever.
TEST_CASE("answers that arrive during the hand-over resume the run at once") {
  batch_folder f;
  llm_config c;
  files_backend b(c, f.dir);
  const auto q1 = question("first"), q2 = question("second");
  CHECK_THROWS_AS(b.send(q1), answer_pending);
  CHECK_THROWS_AS(b.send(q2), answer_pending);
  CHECK(b.hand_over().written == 2);
  f.write("a.results.jsonl", {ok(batch_custom_id(c, q1), "one")});
  CHECK(b.poll());
  CHECK(b.send(q1).text == "one");
  CHECK_THROWS_AS(b.send(q2), answer_pending);  // the resumed round still waits for q2 ...
  f.write("b.results.jsonl", {ok(batch_custom_id(c, q2), "two")});  // ... whose answer lands before the hand-over
  const auto h = b.hand_over();
  CHECK(h.written == 0);
  CHECK(h.awaiting == 0);
  CHECK(h.description.find("answered") != std::string::npos);
  std::stop_source give_up;
  std::jthread watchdog([&](std::stop_token t) {
    for (int i = 0; i < 50 && !t.stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    give_up.request_stop();
  });
  CHECK(await_answers(b, h, 0.1, give_up.get_token()));  // false only if the watchdog had to stop it
  CHECK(b.send(q2).text == "two");
}

TEST_CASE("the provider's spelling") {
  REQUIRE(parse_deferred("files:batch"));
  CHECK(parse_deferred("files:batch")->dir == fs::path("batch"));
  CHECK(parse_deferred("anthropic:runs/b")->kind == "anthropic");
  CHECK_FALSE(parse_deferred("files:"));
  CHECK_FALSE(parse_deferred("openai"));
  CHECK_FALSE(parse_deferred("gemini:x"));
}
