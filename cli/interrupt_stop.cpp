#include "cli/interrupt_stop.h"

#include "support/child_process.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>

namespace kblaster::cli {
namespace {
std::atomic<bool> signalled{false};
}  // namespace

interrupt_stop::interrupt_stop(std::string command) : command_(std::move(command)) {
  signalled = false;
  std::signal(SIGINT, [](int) {
    if (signalled.exchange(true)) std::_Exit(130);
  });
  watcher_ = std::jthread([this](std::stop_token st) {
    while (!st.stop_requested() && !signalled) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!signalled) return;
    std::cerr << "\n" << command_ << ": stopping: the evaluation in flight is abandoned and nothing half-done is "
              << "recorded (Ctrl-C again exits at once)\n";
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
