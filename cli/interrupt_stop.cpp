#include "cli/interrupt_stop.h"

#include "support/child_process.h"
#include "support/stop_wait.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>

namespace kblaster::cli {
namespace {
std::atomic<bool> signalled{false};
}  // namespace

interrupt_stop::interrupt_stop(std::string command, std::string stopping)
    : command_(std::move(command)), stopping_(std::move(stopping)) {
  signalled = false;
  std::signal(SIGINT, [](int) {
    if (signalled.exchange(true)) std::_Exit(130);
  });
  watcher_ = std::jthread([this](std::stop_token st) {
    // A signal handler may only set a flag, which nothing can wake a waiter for: looked at every 50 ms.
    if (!support::wait_until([] { return signalled.load(); }, st, std::chrono::milliseconds(50))) return;
    std::cerr << "\n" << command_ << ": stopping: " << stopping_ << " (Ctrl-C again exits at once)\n";
    source_.request_stop();
    // Then nothing is left running and nothing starts: a child being started as the stop came
    // (a compiler call between two checks of the stop) would otherwise outlive it. The stop came
    // first, so whoever owned a child killed here takes its end for the stop, not for a failure.
    support::stop_all_children();
  });
}

interrupt_stop::~interrupt_stop() {
  watcher_.request_stop();
  watcher_.join();
  std::signal(SIGINT, SIG_DFL);
}

bool interrupt_stop::interrupted() const { return signalled; }

}  // namespace kblaster::cli
