// support/stop_wait: a wait ends with its condition, its deadline or the stop, whichever comes
// first, and a stop requested from another thread wakes the sleeper rather than being noticed
// after the pause. No test depends on how long anything takes: a pause too long to be waited
// out in a test (an hour) is what shows that the stop, not the clock, ended it.
#include "support/stop_wait.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using namespace kblaster::support;
using namespace std::chrono_literals;

TEST_CASE("stop_wait: a pause already stopped does not start, and a pause runs out") {
  std::stop_source stopped;
  stopped.request_stop();
  CHECK_FALSE(sleep_unless_stopped(1h, stopped.get_token()));
  CHECK(sleep_unless_stopped(1ms, std::stop_source().get_token()));
}

TEST_CASE("stop_wait: a stop from another thread ends an hour's pause") {
  std::stop_source source;
  std::jthread stopper([&source] { source.request_stop(); });
  CHECK_FALSE(sleep_unless_stopped(1h, source.get_token()));
}

TEST_CASE("stop_wait: a condition met is true without waiting, even past its deadline") {
  int looks = 0;
  CHECK(wait_until([&] { return ++looks > 0; }, std::stop_source().get_token(), wait_clock::now() - 1s, 1h));
  CHECK(looks == 1);
}

TEST_CASE("stop_wait: a condition met after a few looks ends the wait") {
  int looks = 0;
  CHECK(wait_until([&] { return ++looks == 3; }, std::stop_source().get_token(), 1ms));
  CHECK(looks == 3);
}

TEST_CASE("stop_wait: the deadline ends the wait, the condition looked at once more there") {
  int looks = 0;
  CHECK_FALSE(wait_until([&] { ++looks; return false; }, std::stop_source().get_token(), wait_clock::now() + 5ms, 1h));
  CHECK(looks == 2);  // at the start and at the deadline, not an hour later
}

TEST_CASE("stop_wait: a stop ends a wait for a condition never met") {
  std::stop_source source;
  std::atomic<int> looks{0};
  std::jthread stopper([&] {
    while (looks == 0) std::this_thread::yield();
    source.request_stop();
  });
  CHECK_FALSE(wait_until([&] { ++looks; return false; }, source.get_token(), 1h));
  CHECK(looks >= 1);
}
