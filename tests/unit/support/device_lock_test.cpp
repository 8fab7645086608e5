// support/device_lock.h: one measurement per device at a time, across threads and processes;
// a waiter hears who holds it and can stop waiting; a holder that dies frees the device.
#include "support/device_lock.h"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

using namespace kblaster::support;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
fs::path lock_dir(const char* name) {
  const auto d = fs::temp_directory_path() / ("kblaster-device-lock-" + std::string(name) + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("device lock: a second measurement waits, hears who holds the device, and may stop waiting") {
  const auto dir = lock_dir("wait");
  auto held = device_lock::acquire("gpu-0", "profiling transpose under ncu", {}, {}, dir);
  REQUIRE(held);
  std::stop_source stop;
  std::string holder;
  std::optional<device_lock> second;
  std::thread t([&] { second = device_lock::acquire("gpu-0", "timing", stop.get_token(), [&](const std::string& h) { holder = h; }, dir); });
  std::this_thread::sleep_for(150ms);
  stop.request_stop();
  t.join();
  CHECK_FALSE(second);
  CHECK(holder == "pid " + std::to_string(::getpid()) + ": profiling transpose under ncu");
  // Another device is free meanwhile.
  CHECK(device_lock::acquire("gpu-1", "timing", {}, {}, dir));
  // Released, the device is the next one's at once.
  held.reset();
  const auto next = device_lock::acquire("gpu-0", "timing", {}, {}, dir);
  REQUIRE(next);
  CHECK(next->waited() < 0.05);
  fs::remove_all(dir);
}

TEST_CASE("device lock: the next in line gets the device once the holder lets go, having waited for it") {
  const auto dir = lock_dir("handover");
  auto held = device_lock::acquire("GPU-5f1c/uuid:0", "verifying", {}, {}, dir);  // any name: made safe for a file
  REQUIRE(held);
  std::atomic<bool> got{false};
  double waited = 0;
  std::thread t([&] {
    const auto l = device_lock::acquire("GPU-5f1c/uuid:0", "timing", {}, {}, dir);
    got = l.has_value();
    waited = l ? l->waited() : 0;
  });
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(got.load());  // excluded while held
  held.reset();
  t.join();
  CHECK(got.load());
  CHECK(waited >= 0.15);
  fs::remove_all(dir);
}

TEST_CASE("device lock: a holder that dies frees the device") {
  const auto dir = lock_dir("death");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto l = device_lock::acquire("gpu-0", "a run killed mid-measurement", {}, {}, dir);
    (void)!::write(ready[1], "x", 1);
    ::pause();  // killed below, never unlocking
    ::_exit(0);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stop.request_stop();
  });
  std::string holder;
  CHECK_FALSE(device_lock::acquire("gpu-0", "timing", stop.get_token(), [&](const std::string& h) { holder = h; }, dir));
  stopper.join();
  CHECK(holder == "pid " + std::to_string(child) + ": a run killed mid-measurement");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(device_lock::acquire("gpu-0", "timing", {}, {}, dir));
  ::close(ready[0]);
  ::close(ready[1]);
  fs::remove_all(dir);
}

TEST_CASE("device lock: a holder that asks again at once does not keep a waiter out") {
  // An Optimize whose requests follow one another, and a profile on save that comes meanwhile.
  const auto dir = lock_dir("turns");
  std::atomic<bool> run{true};
  std::atomic<int> rounds{0};
  std::thread busy([&] {
    while (run) {
      auto l = device_lock::acquire("gpu-0", "a request of a long run", {}, {}, dir);
      std::this_thread::sleep_for(20ms);
      ++rounds;
    }
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto mine = device_lock::acquire("gpu-0", "a profile on save", {}, {}, dir);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(mine);
  MESSAGE("waited " << waited);
  CHECK(waited < 0.2);  // about one of the run's requests (20 ms), not the run's whole length
  const int before = rounds;
  std::this_thread::sleep_for(100ms);
  CHECK(rounds == before);  // and the run waits while the profile holds the GPU
  run = false;
  mine.reset();
  busy.join();
  fs::remove_all(dir);
}
