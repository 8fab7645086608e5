// Tests of the engine's harness_client against a fake harness (tests/unit/engine/evaluate/harness_fake.sh):
// every way a harness can die is reported as a structured error, and the next request gets a
// fresh harness.
#include "engine/evaluate/harness_client.h"

#include <doctest/doctest.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

using namespace kblaster::engine;

namespace {

harness_options fake(int watchdog_ms = 10'000) {
  harness_options o;
  o.executable = std::string(KBLASTER_SOURCE_DIR) + "/tests/unit/engine/evaluate/harness_fake.sh";
  o.watchdog = std::chrono::milliseconds(watchdog_ms);
  o.startup_timeout = std::chrono::milliseconds(10'000);
  return o;
}

harness_reply ask(harness_client& c, const std::string& how) {
  return c.request({{"op", "verify"}, {"candidate", how}, {"task", nlohmann::json::object()}}, {});
}

}  // namespace

TEST_CASE("a healthy harness answers each request with its own id and stays the same process") {
  harness_client c(fake());
  const auto a = ask(c, "ok");
  REQUIRE(a.ok());
  CHECK(a.body["verdict"] == "pass");
  const auto pid = c.pid();
  CHECK(pid > 0);
  const auto b = ask(c, "ok");
  REQUIRE(b.ok());
  CHECK(b.body["id"] != a.body["id"]);
  CHECK(c.pid() == pid);
  CHECK(c.starts() == 1);
}

TEST_CASE("lines that are not the reply (noise, other ids) are skipped") {
  harness_client c(fake());
  const auto r = ask(c, "noise");
  REQUIRE(r.ok());
  CHECK(r.body["id"].get<long long>() > 0);
}

TEST_CASE("each kind of death is reported, and a fresh harness takes the next request") {
  struct kase {
    const char* how;
    const char* error;
  };
  for (const auto& k : {kase{"crash", "crash"}, kase{"abort", "abort"}, kase{"kill", "killed"}, kase{"oom", "out_of_memory"},
                        kase{"exit", "exited"}}) {
    CAPTURE(k.how);
    harness_client c(fake());
    const auto r = ask(c, k.how);
    CHECK_FALSE(r.ok());
    CHECK(r.error == k.error);
    // The candidate runs in a runner of its own: a harness that dies is the judge's failure.
    CHECK(r.judge_failed());
    CHECK(r.message.find("restarted") != std::string::npos);
    CHECK(r.to_json()["verdict"] == "error");
    CHECK(c.pid() == -1);
    const auto next = ask(c, "ok");
    REQUIRE(next.ok());
    CHECK(c.starts() == 2);
  }
}

TEST_CASE("the watchdog kills a harness that does not answer") {
  harness_client c(fake(500));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = ask(c, "hang");
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(r.error == "hang");
  CHECK_FALSE(r.judge_failed());  // most likely the candidate's kernel: its verdict
  CHECK(waited >= std::chrono::milliseconds(450));
  CHECK(waited < std::chrono::seconds(5));
  REQUIRE(ask(c, "ok").ok());
  CHECK(c.starts() == 2);
}

TEST_CASE("a missing harness executable is a start failure, not a crash") {
  harness_options o = fake();
  o.executable = "/nonexistent/kblaster-harness";
  harness_client c(o);
  const auto r = ask(c, "ok");
  CHECK_FALSE(r.ok());
  CHECK((r.error == "exited" || r.error == "start_failed"));
}

TEST_CASE("a reply is the candidate's verdict unless the judge says the failure is its own") {
  harness_client c(fake());
  const auto ok = ask(c, "ok");
  REQUIRE(ok.ok());
  CHECK_FALSE(ok.judge_failed());
  const auto own = ask(c, "judge_oom");
  REQUIRE(own.ok());
  CHECK(own.judge_failed());
  CHECK(c.starts() == 1);  // a reply: the harness is alive
}

TEST_CASE("a harness that cannot start is the judge's failure") {
  harness_options o = fake();
  o.executable = "/nonexistent/kblaster-harness";
  harness_client c(o);
  const auto r = ask(c, "ok");
  CHECK(r.judge_failed());
}

TEST_CASE("a stop while the harness starts ends it at once, not when it is up") {
  harness_options o = fake();
  o.environment.push_back("FAKE_HARNESS_START_SECONDS=30");
  harness_client c(o);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = c.request({{"op", "verify"}, {"candidate", "ok"}}, stop.get_token());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stopper.join();
  CHECK(r.error == "cancelled");
  CHECK(seconds < 2.0);  // the fake takes 30 s to come up: waiting for it would show
  MESSAGE("returned " << seconds << " s after the request, the stop at 0.2 s");
}
