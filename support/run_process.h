// Runs a child process with arguments (no shell), captures its stdout and stderr, and kills it
// (its whole process group) when a timeout passes or a stop is requested. Started through
// child_process: stdin is /dev/null, never the daemon's.
#pragma once

#include "support/child_process.h"

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::support {

/// How a child process ended.
struct process_result {
  int exit_code = -1;       // valid when !timed_out and signal == 0
  int signal = 0;           // the signal that ended it, 0 if it exited
  bool timed_out = false;
  bool cancelled = false;   // killed because `stop` was requested
  bool failed_to_start = false;  // exec failed: exit_code holds errno
  std::string out;
  std::string err;
  double seconds = 0;
  bool ok() const { return !timed_out && !cancelled && !failed_to_start && signal == 0 && exit_code == 0; }
};

/// Runs argv[0] (looked up in PATH) with argv, in `cwd` when given. Thread-safe. A stop
/// requested on `stop` kills it (within a tenth of a second) and marks the result cancelled.
process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           const std::optional<std::string>& cwd = std::nullopt, std::stop_token stop = {});


}  // namespace kblaster::support
