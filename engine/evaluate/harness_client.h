// The engine's side of kblaster-harness: starts it as a child process, exchanges JSON lines,
// enforces a watchdog, and turns a crash, hang, abort or out-of-memory into a structured error.
// A dead harness is replaced by a fresh one on the next request, so a candidate can end only a
// harness, never the daemon.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kblaster::engine {

/// How to start the harness.
struct harness_options {
  std::string executable;                            // kblaster-harness; empty: find_harness()
  std::string device = "auto";                       // cpu, cuda, auto
  std::chrono::milliseconds watchdog{10'000};        // a request's own work, beyond timing budgets
  std::chrono::milliseconds startup_timeout{120'000}; // LibTorch takes seconds to load
  std::vector<std::string> environment;              // "NAME=VALUE" set in the child (CUDA_VISIBLE_DEVICES)
  /// Folders the harness reads beyond its own and the system's (read-only in its sandbox): the
  /// tasks' folders, ncu's. What a request names beside these is added as it comes (the harness
  /// is restarted to see it); the libraries a request names are copied in instead.
  std::vector<std::filesystem::path> readable;
};

/// A reply, or why there is none. `error` is empty when `body` holds the harness's reply.
/// KBLASTER_HARNESS_TRACE is set: the harness's phase lines (and, for a profile, ncu's) go on
/// to kblaster's stderr.
bool harness_trace_requested();

struct harness_reply {
  nlohmann::json body;
  std::string error;         // crash, hang, abort, killed, out_of_memory, exited, start_failed, protocol, cancelled
  std::string message;       // a sentence for the user
  std::string stderr_tail;   // the harness's last words
  bool ok() const { return error.empty(); }
  /// The judge failed, not the candidate, so the reply is no verdict on it: the harness did not
  /// start (the sandbox, a library), it died while the candidate ran in its own runner process
  /// (a signal, an exit, its own memory), or its reply says the failure is its own
  /// (`"judge_error": true`). A runner that dies is reported in a reply (the candidate's), a
  /// harness that stops answering is a hang (the candidate's kernel, most likely), and a cancel
  /// is neither.
  bool judge_failed() const;
  /// The reply as JSON: the body, or {"verdict":"error","check":error,"reason":message,...}.
  nlohmann::json to_json() const;
};

/// One harness child. Not thread-safe: one request at a time (callers serialise).
class harness_client {
 public:
  explicit harness_client(harness_options options);
  ~harness_client();
  harness_client(const harness_client&) = delete;
  harness_client& operator=(const harness_client&) = delete;

  /// Sends `request` (an "id" is added) and waits for its reply; the deadline is the watchdog
  /// plus the time the request's own timing policy may take. Starts a harness when none runs.
  /// A stop requested on `stop` abandons the request: the harness is killed (the next request
  /// starts a fresh one) and the reply's error is "cancelled".
  harness_reply request(nlohmann::json request, std::stop_token stop);
  /// The running child's pid, or -1.
  pid_t pid() const;
  /// The running child's scratch folder (the only one it may write), or empty. A request that
  /// names a folder the child was not shown restarts it, and the scratch folder changes with it.
  std::filesystem::path scratch() const;
  /// How many harnesses were started, the first included.
  int starts() const { return starts_; }
  /// Ends the child (shutdown request, then SIGKILL).
  void stop();

 private:
  struct child;
  harness_options options_;
  std::unique_ptr<child> child_;
  int starts_ = 0;
  long long next_id_ = 1;
  /// Starts the harness and waits for its "ready"; a stop meanwhile kills it (LibTorch's load
  /// takes a second or more, which a cancelled Optimize must not wait for).
  harness_reply start(std::stop_token stop);
  /// The request with its libraries copied where the harness reads them; false when one cannot be.
  bool stage_libraries(nlohmann::json& request, std::string& problem);
  /// The folders `request` reads that the running harness was not shown (it is stopped then).
  void show_folders_read_by(const nlohmann::json& request);
  std::vector<std::filesystem::path> shown_;  // what a harness started now is shown, beyond its own
  harness_reply lost(const std::string& during, bool timed_out);
};

/// kblaster-harness beside the running executable's build tree, in $KBLASTER_HARNESS, or on PATH; empty when absent.
std::string find_harness();

}  // namespace kblaster::engine
