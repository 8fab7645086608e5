// Cancellation by id, by progress token, and by edits (ContentModified), including races.
#include "server_fixture.h"

#include <doctest/doctest.h>

#include <random>

using namespace kblaster::testing;

namespace {
json self_test(int steps, int step_ms, json extra = json::object()) {
  json args = {{"steps", steps}, {"stepMs", step_ms}};
  args.update(extra);
  return {{"command", "kblaster.selfTest"}, {"arguments", json::array({args})}};
}
}  // namespace

TEST_CASE("$/cancelRequest cancels exactly the named request") {
  server_fixture s;
  s.initialize();
  s.request(1, "workspace/executeCommand", self_test(100, 10));
  s.request(2, "workspace/executeCommand", self_test(5, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.notify("$/cancelRequest", {{"id", 1}});
  CHECK(error_code_of(s.reply(1)) == -32800);
  CHECK(s.reply(2)["result"]["completedSteps"] == 5);
}

TEST_CASE("late and unknown cancels are harmless") {
  server_fixture s;
  s.initialize();
  s.request(1, "workspace/executeCommand", self_test(1, 0));
  CHECK(s.reply(1)["result"]["completedSteps"] == 1);
  s.notify("$/cancelRequest", {{"id", 1}});
  s.notify("$/cancelRequest", {{"id", "never-sent"}});
  s.notify("$/cancelRequest", {{"nonsense", true}});
  s.notify("$/cancelRequest", json::array());
  s.request(2, "shutdown", nullptr);
  CHECK(s.reply(2)["result"].is_null());
  CHECK(s.transport().all_received().empty());
}

TEST_CASE("cancellation races: every request gets exactly one reply, a result or RequestCancelled") {
  server_fixture s;
  s.initialize();
  std::mt19937 rng(7);
  constexpr int n = 200;
  for (int i = 1; i <= n; ++i) {
    s.request(i, "workspace/executeCommand", self_test(1 + static_cast<int>(rng() % 3), static_cast<int>(rng() % 3)));
    if (rng() % 2) s.notify("$/cancelRequest", {{"id", static_cast<int>(1 + rng() % i)}});
  }
  int results = 0, cancelled = 0;
  for (int i = 1; i <= n; ++i) {
    const json r = s.reply(i);
    if (r.contains("result")) ++results;
    else if (error_code_of(r) == -32800) ++cancelled;
  }
  CHECK(results + cancelled == n);
  CHECK(cancelled > 0);
  // No second reply for any id.
  CHECK_FALSE(s.transport().take([](const json& j) { return j.contains("id") && !j.contains("method"); },
                                 std::chrono::milliseconds(200)));
}

TEST_CASE("an edit makes running requests about that document answer ContentModified") {
  server_fixture s;
  s.initialize();
  s.open("file:///k.cu", "__global__ void k() {}\n");
  s.open("file:///other.cu", "__global__ void o() {}\n");
  s.request(1, "workspace/executeCommand", self_test(50, 10, {{"textDocument", {{"uri", "file:///k.cu"}}}}));
  s.request(2, "workspace/executeCommand", self_test(5, 10, {{"textDocument", {{"uri", "file:///other.cu"}}}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///k.cu"}, {"version", 2}}},
                                      {"contentChanges", {{{"text", "// changed\n"}}}}});
  CHECK(error_code_of(s.reply(1)) == -32801);
  CHECK(s.reply(2)["result"]["completedSteps"] == 5);
}
