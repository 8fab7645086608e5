// A runner under ncu for a profile request, and the one started ahead for the next request.
// Starting ncu, its injection into the runner and the runner's CUDA context take 0.8-1.0 s on an
// H100, about 40 % of a state's counters profile. Started when the previous profile ends, that
// happens while the judge serves other requests; the profile then pays only ncu's passes and
// exit. An ncu that waits for its range does not move another process's kernel timings
// (tools/gpu/ncu_cost/idle_ncu_check.sh on an H100: within 1 %, clocks unlocked until it profiles).
#pragma once

#include "harness/runner_process.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kblaster::harness {

/// The value of ncu's `-o` option in `argv` (the report's base path), or empty when it has none.
std::string ncu_report_base(const std::vector<std::string>& argv);
/// `argv` with the value of its `-o` option replaced by `base` (unchanged when it has none: the
/// judge starts nothing ahead for a command that names no report).
std::vector<std::string> with_ncu_report_base(std::vector<std::string> argv, const std::string& base);
/// The file ncu writes for a report base: the base itself when it ends in .ncu-rep, else base.ncu-rep.
std::string ncu_report_file(const std::string& base);

/// A kblaster-runner started under an ncu command line, its socket and log in `dir` (the
/// sandbox's own folder). When started ahead, its ncu writes to a report base of its own, and
/// deliver_report() moves the report to where the request that used it asked.
class profile_runner {
 public:
  /// Starts `program` under `ncu_argv`; returns at once (ready() on process() waits). `ahead`:
  /// started before any request asked, with the report going to a base of its own in `dir`.
  profile_runner(const std::string& program, const std::string& device, const std::vector<std::string>& ncu_argv,
                 const std::filesystem::path& dir, std::uint64_t serial, bool ahead);

  /// Whether this runner can serve a request for `ncu_argv`: the same command but for its report path.
  bool serves(const std::vector<std::string>& ncu_argv) const;
  /// After ncu has exited: its report moved to the base `ncu_argv` names (nothing to do when it
  /// was written there). Empty on success, else why not.
  std::string deliver_report(const std::vector<std::string>& ncu_argv) const;

  runner_process& process() { return *process_; }
  const std::string& log_path() const { return wrapper_.log_path; }
  bool started_ahead() const { return ahead_; }

 private:
  std::vector<std::string> argv_;  // as started: its own report base when ahead
  runner_wrapper wrapper_;
  bool ahead_ = false;
  std::unique_ptr<runner_process> process_;
};

}  // namespace kblaster::harness
