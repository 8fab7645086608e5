// Server-initiated progress: create, begin/report/end, and cancel from the progress UI.
#include "server_fixture.h"

#include <doctest/doctest.h>

using namespace kblaster::testing;

namespace {
json self_test(int steps, int step_ms) {
  return {{"command", "kblaster.selfTest"}, {"arguments", json::array({{{"steps", steps}, {"stepMs", step_ms}}})}};
}
json progress_capable() { return {{"window", {{"workDoneProgress", true}}}}; }
}  // namespace

TEST_CASE("with a capable client the server creates a token and reports begin, rising reports, end") {
  server_fixture s;
  s.initialize(progress_capable());
  s.request(1, "workspace/executeCommand", self_test(4, 5));
  const auto create = s.message("window/workDoneProgress/create");
  REQUIRE(create);
  const json token = (*create)["params"]["token"];
  s.send(kblaster::protocol::make_result((*create)["id"], nullptr));
  std::vector<json> values;
  for (;;) {
    const auto p = s.message("$/progress");
    REQUIRE(p);
    CHECK((*p)["params"]["token"] == token);
    values.push_back((*p)["params"]["value"]);
    if (values.back()["kind"] == "end") break;
  }
  REQUIRE(values.size() == 6);
  CHECK(values.front()["kind"] == "begin");
  CHECK(values.front()["cancellable"] == true);
  int last = 0;
  for (std::size_t i = 1; i + 1 < values.size(); ++i) {
    CHECK(values[i]["kind"] == "report");
    CHECK(values[i]["percentage"].get<int>() >= last);
    last = values[i]["percentage"].get<int>();
  }
  CHECK(last == 100);
  CHECK(s.reply(1)["result"]["completedSteps"] == 4);
}

TEST_CASE("a client-provided workDoneToken is used without create") {
  server_fixture s;
  s.initialize(progress_capable());
  json params = self_test(2, 0);
  params["workDoneToken"] = "client-token";
  s.request(1, "workspace/executeCommand", params);
  CHECK(s.reply(1)["result"]["completedSteps"] == 2);
  const auto begin = s.message("$/progress");
  REQUIRE(begin);
  CHECK((*begin)["params"]["token"] == "client-token");
  CHECK_FALSE(s.message("window/workDoneProgress/create", std::chrono::milliseconds(50)));
}

TEST_CASE("a client without progress support gets no progress messages") {
  server_fixture s;
  s.initialize();
  s.request(1, "workspace/executeCommand", self_test(3, 0));
  CHECK(s.reply(1)["result"]["completedSteps"] == 3);
  CHECK(s.transport().all_received().empty());
}

TEST_CASE("window/workDoneProgress/cancel cancels the work behind the token") {
  server_fixture s;
  s.initialize(progress_capable());
  s.request(1, "workspace/executeCommand", self_test(200, 10));
  const auto create = s.message("window/workDoneProgress/create");
  REQUIRE(create);
  s.send(kblaster::protocol::make_result((*create)["id"], nullptr));
  REQUIRE(s.message("$/progress"));  // begin
  s.notify("window/workDoneProgress/cancel", {{"token", (*create)["params"]["token"]}});
  CHECK(error_code_of(s.reply(1)) == -32800);
}

TEST_CASE("a client that refuses create gets no progress, and the work still completes") {
  server_fixture s;
  s.initialize(progress_capable());
  s.request(1, "workspace/executeCommand", self_test(2, 0));
  const auto create = s.message("window/workDoneProgress/create");
  REQUIRE(create);
  s.send(kblaster::protocol::make_error((*create)["id"], kblaster::protocol::error_code::request_failed, "no"));
  CHECK(s.reply(1)["result"]["completedSteps"] == 2);
  CHECK_FALSE(s.message("$/progress", std::chrono::milliseconds(50)));
}
