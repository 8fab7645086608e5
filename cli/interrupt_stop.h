// Ctrl-C for long CLI commands: the first SIGINT requests a stop (the loop abandons the
// evaluation in flight and records nothing half-done), then kills every child still running
// and refuses to start another (the command writes what it measured and ends); a second one
// exits at once.
#pragma once

#include <atomic>
#include <stop_token>
#include <string>
#include <thread>

namespace kblaster::cli {

/// Installs the SIGINT handler for its lifetime's command (one per process at a time).
class interrupt_stop {
 public:
  /// `command` names the command in the message printed at the first Ctrl-C, and `stopping`
  /// says what the stop does to the work in flight.
  explicit interrupt_stop(std::string command,
                          std::string stopping = "the evaluation in flight is abandoned and nothing half-done is recorded");
  ~interrupt_stop();
  interrupt_stop(const interrupt_stop&) = delete;
  interrupt_stop& operator=(const interrupt_stop&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  /// True once Ctrl-C was pressed.
  bool interrupted() const;

 private:
  std::string command_, stopping_;
  std::stop_source source_;
  std::jthread watcher_;  // turns the signal flag into a stop request (a handler may only set a flag)
};

}  // namespace kblaster::cli
