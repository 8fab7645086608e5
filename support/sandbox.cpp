// bubblewrap command lines and the probe that decides whether they can be used here.
#include "support/sandbox.h"

#include "support/files.h"
#include "support/run_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace kblaster::support {
namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The first executable called `name` on PATH, or empty.
std::string on_path(const std::string& name) {
  std::string path = env_or("PATH", "/usr/local/bin:/usr/bin:/bin");
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const auto end = std::min(path.find(':', pos), path.size());
    const fs::path candidate = fs::path(path.substr(pos, end - pos)) / name;
    if (end > pos && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    pos = end + 1;
  }
  return {};
}

std::string find_bwrap() {
  if (const char* p = std::getenv("KBLASTER_BWRAP"); p && *p) return p;
  return on_path("bwrap");
}

// A name that looks like it holds a credential is never passed, whatever the allow-list says.
bool looks_secret(const std::string& name) {
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

bool passed(const std::string& name) {
  if (looks_secret(name)) return false;
  const auto& list = sandbox_passed_variables();
  if (std::find(list.begin(), list.end(), name) != list.end()) return true;
  return name.rfind("CUDA_", 0) == 0;  // CUDA_VISIBLE_DEVICES, CUDA_MODULE_LOADING, ...
}

// The environment of a job: the allowed part of ours, then the policy's, HOME and TMPDIR last.
std::vector<std::pair<std::string, std::string>> job_environment(const sandbox_policy& policy) {
  std::vector<std::pair<std::string, std::string>> env;
  auto set = [&](const std::string& name, const std::string& value) {
    for (auto& [n, v] : env)
      if (n == name) {
        v = value;
        return;
      }
    env.emplace_back(name, value);
  };
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    if (passed(entry.substr(0, eq))) set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& entry : policy.environment) {
    const auto eq = entry.find('=');
    if (eq != std::string::npos) set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  set("HOME", policy.scratch.string());
  set("TMPDIR", policy.scratch.string());
  return env;
}

std::vector<std::string> limits_prefix(const sandbox_limits& l) {
  static const std::string prlimit = on_path("prlimit");
  if (prlimit.empty()) return {};
  auto both = [](std::uint64_t v) { return std::to_string(v) + ":" + std::to_string(v); };
  return {prlimit, "--fsize=" + both(l.file_size_bytes), "--nofile=" + both(l.open_files),
          "--core=" + both(l.core_bytes), "--"};
}

// bwrap's options for a job under `policy`: the namespaces, then one mount per entry of its view.
std::vector<std::string> bwrap_options(const sandbox_policy& policy) {
  std::vector<std::string> out{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"};
  using access = sandbox_mount::access;
  for (const auto& m : sandbox_view(policy)) {
    const auto path = m.path.string();
    switch (m.how) {
      case access::read_only: out.insert(out.end(), {"--ro-bind", path, path}); break;
      case access::writable: out.insert(out.end(), {"--bind", path, path}); break;
      case access::device: out.insert(out.end(), {"--dev-bind", path, path}); break;
      case access::symlink: out.insert(out.end(), {"--symlink", m.link_target.string(), path}); break;
      case access::hidden: out.insert(out.end(), {"--ro-bind", "/dev/null", path}); break;
      case access::empty:
        if (path == "/dev") out.insert(out.end(), {"--dev", "/dev"});
        else if (path == "/proc") out.insert(out.end(), {"--proc", "/proc"});
        else out.insert(out.end(), {"--tmpfs", path});
        break;
    }
  }
  // The root bwrap builds the view on is a tmpfs of its own: read-only, so that only the scratch,
  // the writable folders and the private /tmp take writes.
  out.insert(out.end(), {"--remount-ro", "/"});
  return out;
}

sandbox_report probe() {
  sandbox_report r;
  const auto mode = env_or("KBLASTER_SANDBOX", "auto");
  r.mode = mode == "off" ? sandbox_mode::off : mode == "required" ? sandbox_mode::required : sandbox_mode::automatic;
  r.bwrap = find_bwrap();
  if (r.bwrap.empty()) {
    r.problem = "bwrap (bubblewrap) not found on PATH; install Debian's bubblewrap or set KBLASTER_BWRAP";
  } else {
    const auto v = run_process({r.bwrap, "--version"}, std::chrono::seconds(10));
    r.version = v.ok() ? v.out.substr(0, v.out.find('\n')) : "";
    // The options every job uses: a failure here (no user namespaces, a seccomp'd container)
    // means no job could start under it.
    std::vector<std::string> argv{r.bwrap};
    sandbox_policy nothing;
    nothing.gpu = false;
    const auto options = bwrap_options(nothing);
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "/bin/true"});
    const auto t = run_process(argv, std::chrono::seconds(20));
    if (t.ok()) {
      r.available = true;
    } else {
      r.problem = r.bwrap + " cannot start a sandbox here: " +
                  (t.err.empty() ? "exit " + std::to_string(t.exit_code) : t.err.substr(0, t.err.find('\n')));
    }
  }
  r.protections = {
      "network: none (own network namespace; loopback included)",
      "processes: own PID namespace (the daemon and other jobs are invisible and cannot be signalled); "
      "the whole tree dies with its request",
      "files: deny by default: only an allow-list is visible (the system's programs and libraries, the CUDA "
      "toolkit, Nsight Compute, LibTorch, the kblaster binaries, the job's own task and sources read-only, its "
      "scratch folder writable); no home folder, no /work, /srv, /mnt, /media, no other project; a private "
      "empty /tmp; private /dev (GPU nodes only) and /proc",
      "secrets: environment reduced to an allow-list (no API keys); ~/.ssh, ~/.config, credentials and the "
      "daemon's sockets hidden again should a shown folder hold them",
      "capabilities: all dropped; new session (no terminal injection)",
      "limits: file size, open files, no core dumps (prlimit); a watchdog per request"};
  if (r.mode == sandbox_mode::off) {
    r.summary = "UNSANDBOXED (KBLASTER_SANDBOX=off): candidates run with the daemon's rights";
  } else if (r.available) {
    r.summary = "sandboxed (" + (r.version.empty() ? r.bwrap : r.version) + ")";
  } else {
    r.summary = "UNSANDBOXED: " + r.problem;
  }
  return r;
}

}  // namespace

sandbox_mode configured_sandbox_mode() { return sandbox_support().mode; }

const sandbox_report& sandbox_support() {
  static const sandbox_report report = probe();
  return report;
}

const std::vector<std::string>& sandbox_passed_variables() {
  static const std::vector<std::string> names{
      "PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "NVIDIA_VISIBLE_DEVICES",
      "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "KBLASTER_DLPACK_INCLUDE", "KBLASTER_HARNESS_TRACE",
      "OMP_NUM_THREADS", "MKL_NUM_THREADS"};
  return names;
}

std::vector<std::string> sandboxed_command(const std::vector<std::string>& argv, const sandbox_policy& policy) {
  const auto& support = sandbox_support();
  const auto env = job_environment(policy);
  std::vector<std::string> cmd;
  if (!support.active()) {
    if (support.mode == sandbox_mode::required)
      throw sandbox_unavailable("the sandbox is required (KBLASTER_SANDBOX=required) but " + support.problem);
    // Without namespaces the environment is still reduced: no key reaches candidate code.
    cmd = {"/usr/bin/env", "-i"};
    for (const auto& [n, v] : env) cmd.push_back(n + "=" + v);
    const auto limits = limits_prefix(policy.limits);
    cmd.insert(cmd.end(), limits.begin(), limits.end());
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return cmd;
  }
  // bwrap itself starts with an empty environment: it is the sandbox's first process, and a job
  // can read its /proc/1/environ.
  cmd = {"/usr/bin/env", "-i", support.bwrap};
  const auto options = bwrap_options(policy);
  cmd.insert(cmd.end(), options.begin(), options.end());
  // The working directory stays the caller's where the job can see it (bwrap falls back to /
  // where it cannot): relative paths in requests keep their meaning only inside what is shown.
  cmd.push_back("--clearenv");
  for (const auto& [n, v] : env) cmd.insert(cmd.end(), {"--setenv", n, v});
  cmd.push_back("--");
  const auto limits = limits_prefix(policy.limits);
  cmd.insert(cmd.end(), limits.begin(), limits.end());
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  return cmd;
}

int job_signal(int wait_status) {
  if (WIFSIGNALED(wait_status)) return WTERMSIG(wait_status);
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) > 128 && WEXITSTATUS(wait_status) < 128 + 65)
    return WEXITSTATUS(wait_status) - 128;
  return 0;
}

sandbox_scratch::sandbox_scratch(const fs::path& parent, const std::string& label) {
  fs::create_directories(parent);
  std::string tmpl = (parent / (label + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "cannot create " + tmpl);
  path_ = tmpl;
}

sandbox_scratch::~sandbox_scratch() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

sandbox_scratch::sandbox_scratch(sandbox_scratch&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

sandbox_scratch& sandbox_scratch::operator=(sandbox_scratch&& other) noexcept {
  if (this != &other) {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

}  // namespace kblaster::support
