// The sandbox for code KernelBlaster did not write: model-written candidates (run by
// kblaster-harness, profiled by ncu) and the compiler runs that read their sources. Built on
// bubblewrap (Debian's `bubblewrap`): the job gets its own PID, network, IPC and UTS namespaces,
// sees the file system read-only with the user's secrets hidden, writes only to its scratch
// folder, inherits an environment reduced to an allow-list, runs under resource limits, and
// dies with whoever started it (the whole namespace goes when its first process ends).
//
// Where bubblewrap cannot run, `mode::automatic` runs the job without it and says so
// (`sandbox_support().summary`, `kblaster doctor`, the evaluator's description); `mode::required`
// refuses instead. Nothing downgrades silently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::support {

/// How strictly jobs are sandboxed: $KBLASTER_SANDBOX = auto (default) | required | off.
enum class sandbox_mode { automatic, required, off };
sandbox_mode configured_sandbox_mode();

/// What the machine offers, probed once per process (bwrap found and able to start a job).
struct sandbox_report {
  bool available = false;
  std::string bwrap;     ///< the bwrap executable used
  std::string version;   ///< "bubblewrap 0.8.0"
  std::string problem;   ///< why it is not available
  sandbox_mode mode = sandbox_mode::automatic;
  /// The protections a sandboxed job has, one line each, for `kblaster doctor`.
  std::vector<std::string> protections;
  /// One line: "bwrap 0.8.0: ..." or "UNSANDBOXED: ..." when jobs run without it.
  std::string summary;
  bool active() const { return available && mode != sandbox_mode::off; }
};
const sandbox_report& sandbox_support();

/// Limits set on the job (prlimit), beyond the namespaces.
struct sandbox_limits {
  std::uint64_t file_size_bytes = 4ull << 30;  ///< largest file it may write (ncu reports are large)
  std::uint64_t open_files = 4096;
  std::uint64_t core_bytes = 0;                ///< no core dumps of candidate code
};

/// One job's sandbox.
struct sandbox_policy {
  std::filesystem::path scratch;  ///< the only writable folder; its HOME and TMPDIR
  std::vector<std::filesystem::path> writable;  ///< further folders it must write (a build's output)
  std::vector<std::string> environment;  ///< "NAME=VALUE" beside the pass-through allow-list
  bool gpu = true;  ///< make /dev/nvidia* visible
  sandbox_limits limits;
};

/// Thrown when the mode is `required` and bubblewrap cannot run.
class sandbox_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The command line that runs `argv` under `policy`: bwrap's options, prlimit, then argv. When
/// the sandbox is off or unavailable (mode automatic), argv under prlimit alone, with the
/// environment still reduced. Throws sandbox_unavailable in mode `required` without bwrap.
std::vector<std::string> sandboxed_command(const std::vector<std::string>& argv, const sandbox_policy& policy);

/// The daemon's variables a sandboxed job inherits (PATH, CUDA_VISIBLE_DEVICES, ...); every
/// other one, API keys included, is dropped.
const std::vector<std::string>& sandbox_passed_variables();

/// Paths hidden from a sandboxed job (the user's keys, credentials, the daemon's sockets), as
/// they exist on this machine.
std::vector<std::filesystem::path> sandbox_hidden_paths();

/// The signal that ended a job, from its wait status: bwrap reports a job killed by signal N
/// as exit status 128 + N. 0 when it exited on its own.
int job_signal(int wait_status);

/// A fresh scratch folder for one job under `parent` (mode 0700), removed with the object.
class sandbox_scratch {
 public:
  explicit sandbox_scratch(const std::filesystem::path& parent, const std::string& label);
  ~sandbox_scratch();
  sandbox_scratch(const sandbox_scratch&) = delete;
  sandbox_scratch& operator=(const sandbox_scratch&) = delete;
  sandbox_scratch(sandbox_scratch&& other) noexcept;
  sandbox_scratch& operator=(sandbox_scratch&& other) noexcept;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kblaster::support
