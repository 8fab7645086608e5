// The judge's handle on one kblaster-runner: the process that loads one candidate and calls it.
// Everything it replies is treated as hostile (a candidate owns that process once loaded): the
// judge reads fixed-size replies with a deadline, counts the runner's threads from /proc, and
// kills it (it starts no processes of its own: its system-call filter forbids that).
#pragma once

#include "harness/runner/protocol.h"

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kblaster::harness {

class shared_arena;

/// How a round trip with the runner ended.
struct runner_reply {
  enum class outcome { replied, died, timed_out };
  outcome how = outcome::replied;
  runner::reply body;     // valid when replied
  int signal = 0;         // died: the signal that ended it (0: it exited)
  int exit_code = 0;      // died without a signal
  bool wrapped = false;   // died under a wrapper (ncu), which outlives it: how it ended is in ncu's log
  bool replied() const { return how == outcome::replied; }
  /// The verdict check for a runner that did not reply: crash, abort, hang, out_of_memory.
  std::string lost_check() const;
  /// A sentence for the user when it did not reply.
  std::string lost_reason(const std::string& during) const;
};

/// A runner started under another program (ncu), which passes no descriptor down: the runner
/// connects to a socket the judge listens on, and the wrapper's output goes to a file.
struct runner_wrapper {
  std::vector<std::string> argv;  ///< the wrapper's command line; the runner's follows it
  std::string socket_path;        ///< where the judge listens (a folder only this sandbox writes)
  std::string log_path;           ///< the wrapper's and the runner's stdout and stderr
};

class runner_process {
 public:
  using deadline = std::chrono::steady_clock::time_point;
  /// Starts `program` (kblaster-runner) for `device` ("cuda" or "cpu"); returns at once. The
  /// runner's start-up (its CUDA context) proceeds while the judge works; ready() waits for it.
  runner_process(const std::string& program, const std::string& device);
  /// Starts `program` under `wrapper` (ncu); ready() also waits for the runner to connect.
  runner_process(const std::string& program, const std::string& device, const runner_wrapper& wrapper);
  ~runner_process();  // kills and reaps
  runner_process(const runner_process&) = delete;
  runner_process& operator=(const runner_process&) = delete;

  /// Waits for the start-up reply (once; later calls repeat its answer). Empty on success, else
  /// why the runner could not start.
  std::string ready(deadline until);
  /// What the runner said of its system-call filter ("seccomp filter active" or why not).
  const std::string& filter_state() const { return filter_state_; }
  runner_reply load(const std::string& library, deadline until);
  runner_reply map(const shared_arena& arena, deadline until);
  /// One call of kb_forward over `descs` (inputs then outputs). Two-phase: the reply comes when
  /// the candidate's stream is done, and finish() then synchronises the device.
  runner_reply call(const std::vector<runner::tensor_desc>& descs, int n_in, int n_out, bool two_phase, deadline until);
  runner_reply finish(deadline until);
  /// `calls` calls back to back in one exchange, call c on `first` with each tensor moved by
  /// c * slot_stride[i] (its own slot of the arena), timed together by the runner's events.
  /// `empty`: the same exchange without the candidate (the views built and checked, one kernel
  /// launched that holds the GPU for `spin_ms`, about what the batch takes), the cost the judge's
  /// clock takes off.
  runner_reply batch_call(const std::vector<runner::tensor_desc>& first, const std::vector<std::uint64_t>& slot_stride,
                          int n_in, int n_out, int calls, bool empty, double spin_ms, deadline until);
  /// A call inside the profiled range, on the runner's own copies of the tensors (flag_profile).
  runner_reply profiled_call(const std::vector<runner::tensor_desc>& descs, int n_in, int n_out, deadline until);
  /// Asks the runner to quit and waits for the process started (the wrapper, when there is one)
  /// to exit; kills it at `until`. Its wait status, or -1 when it had to be killed.
  int quit_and_wait(deadline until);
  /// Asks the runner to quit and waits until it has exited: its end of the socket closed and
  /// every thread of the process that connected ended (its descriptors, the GPU's among them,
  /// are closed then), though a wrapper (ncu) may still be writing its report. False when that
  /// was not so by `until`, or the runner's pid is not known; the process is left as it is
  /// either way, for quit_and_wait().
  bool quit_and_await_close(deadline until);
  /// Threads in the runner now (from /proc, not from the runner), or -1.
  int threads() const;
  /// Nanoseconds the runner's threads have spent on a CPU so far (the kernel's scheduler
  /// statistics, /proc/PID/task/*/schedstat: the runner cannot change them), or -1.
  long long cpu_ns() const;
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0; }
  /// SIGKILL and reap; records how it ended. Idempotent.
  void kill();

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool wrapped_ = false;
  int listen_fd_ = -1;  // wrapped: the socket the runner connects to, until it has
  pid_t peer_pid_ = 0;  // wrapped: the runner's pid, from the socket's peer credentials
  std::string socket_path_;
  int wait_status_ = 0;
  std::string filter_state_;
  bool started_ = false;
  std::string start_error_;
  runner_reply exchange(const runner::request_header& h, const void* payload, std::size_t payload_bytes, int send_fd,
                        deadline until);
  runner_reply receive(deadline until);
  std::string accept_runner(deadline until);
  runner_reply lost(runner_reply::outcome how);
};

/// The runner program next to this harness executable (or $KBLASTER_RUNNER). Throws when missing.
std::string runner_program();

}  // namespace kblaster::harness
