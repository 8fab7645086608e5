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

/// One job's sandbox. Deny by default: of the user's files the job sees only what is named here
/// (a candidate once read a file under /tmp and threw it back as its error message).
struct sandbox_policy {
  std::filesystem::path scratch;  ///< the only writable folder; its HOME and TMPDIR
  std::vector<std::filesystem::path> writable;  ///< further folders it must write (a build's output)
  /// What the job reads and nothing else of the user's: its task's folder, its sources, a tool
  /// or program outside the system's folders (read-only; a folder too broad to show, `/`, a home
  /// folder or /tmp itself, is left out: sandbox_too_broad).
  std::vector<std::filesystem::path> readable;
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

/// One thing of the machine's file system a sandboxed job sees, and why it must.
struct sandbox_mount {
  enum class access {
    read_only,  ///< bound read-only
    writable,   ///< bound read-write (the scratch folder, a build's tree)
    device,     ///< a device node (the GPU's)
    symlink,    ///< recreated as the same link (merged-/usr's /bin -> usr/bin)
    empty,      ///< an empty private folder (/tmp, and a secret inside something shown)
    hidden,     ///< a file replaced by an empty one (a secret inside something shown)
  };
  std::filesystem::path path;
  access how = access::read_only;
  std::string why;
  std::filesystem::path link_target;  ///< for `symlink`: what the link says
};

/// What every sandboxed job sees, each entry with its reason: the system's programs and
/// libraries (/usr, the /bin and /lib links), the parts of /etc that programs need, /sys, a
/// private /dev (the GPU's nodes when `gpu`), /proc and /tmp, the CUDA toolkit and Nsight
/// Compute where they are installed, the libraries $LD_LIBRARY_PATH names, and the folders the
/// user allows in $KBLASTER_SANDBOX_ALLOW (colon-separated). Nothing else.
std::vector<sandbox_mount> sandbox_system_view(bool gpu);

/// What a job under `policy` sees, in the order the mounts are made: the system's view, the
/// policy's readable folders, its scratch and writable folders, then the secrets
/// (sandbox_hidden_paths) that fall inside any of those, hidden again.
std::vector<sandbox_mount> sandbox_view(const sandbox_policy& policy);

/// Whether `path` is too broad to show a job: `/`, or a folder that is or holds the user's
/// home, /home, /root, /tmp, /work, /srv, /mnt, /media, /opt, /var, /run or the user's scratch
/// root. A file, or a folder deeper than those (a project, a venv), is not.
bool sandbox_too_broad(const std::filesystem::path& path);

/// The folders `program` needs to run: its own (companions beside it: the harness's runner)
/// and those its RUNPATH names (LibTorch in a site-packages folder, widened to that folder:
/// torch's libraries find NVIDIA's wheels beside it).
std::vector<std::filesystem::path> program_folders(const std::filesystem::path& program);

/// The folders Nsight Compute run as `ncu` needs: the installation it belongs to (the folder
/// above its bin/), and, for a CUDA toolkit's `ncu` (a script that runs the newest
/// ../nsight-compute-*/ncu beside the toolkit, else one under /opt/nvidia/nsight-compute) with
/// none beside it, the standalone installations that script then runs. Only those that exist.
std::vector<std::filesystem::path> ncu_folders(const std::filesystem::path& ncu,
                                               const std::filesystem::path& standalone = "/opt/nvidia/nsight-compute");

/// What a compiler run by `argv` reads beyond the system: the compiler's installation, each
/// source file it names and that file's folder (its local headers), and the -I / -isystem
/// folders. For a policy's `readable`.
std::vector<std::filesystem::path> folders_read_by_compile(const std::vector<std::string>& argv);

/// Secrets hidden again when they fall inside a folder a job is shown (the user's keys,
/// credentials, the daemon's sockets), as they exist on this machine.
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
