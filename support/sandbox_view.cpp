// What a sandboxed job sees of the file system: an allow-list built in one place, each entry with
// the reason it is there. Everything else of the machine (home folders, /tmp, other projects,
// /work, /srv, /mnt, /opt but for a toolchain installed there) does not exist for the job.
#include "support/sandbox.h"

#include "support/elf_runpath.h"
#include "support/files.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace kblaster::support {
namespace fs = std::filesystem;

namespace {

using access = sandbox_mount::access;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> split_colons(const std::string& list) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < list.size()) {
    const auto end = std::min(list.find(':', pos), list.size());
    if (end > pos) out.push_back(list.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  const auto rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : c;
}

// The user's home folders: $HOME and the password database's (a test may move $HOME).
std::vector<fs::path> home_folders() {
  std::vector<fs::path> out;
  if (const auto h = env("HOME"); !h.empty()) out.push_back(canonical_or_same(h));
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir && *pw->pw_dir) out.push_back(canonical_or_same(pw->pw_dir));
  return out;
}

// The first executable called `name` on PATH, resolved through its links, or empty.
fs::path tool_on_path(const std::string& name) {
  for (const auto& dir : split_colons(env("PATH").empty() ? "/usr/local/bin:/usr/bin:/bin" : env("PATH"))) {
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return canonical_or_same(candidate);
  }
  return {};
}

// The installation a tool belongs to: the folder above its bin/ (a toolkit's root), else its own.
fs::path install_root(const fs::path& tool) {
  const auto dir = tool.parent_path();
  return dir.filename() == "bin" ? dir.parent_path() : dir;
}

// Builds the list: refuses what is too broad, skips what a read-only entry already shows and
// what does not exist (bwrap cannot make a mount point inside a read-only folder).
class view_builder {
 public:
  std::vector<sandbox_mount> entries;

  void add(const fs::path& path, access how, const std::string& why) {
    std::error_code ec;
    if (path.empty() || !fs::exists(fs::symlink_status(path, ec))) return;
    const auto abs = fs::absolute(path, ec).lexically_normal();
    if ((how == access::read_only || how == access::writable) &&
        (sandbox_too_broad(abs) || sandbox_too_broad(canonical_or_same(abs)))) {
      refused.push_back(abs);
      return;
    }
    if (how == access::read_only && shown(abs)) return;
    entries.push_back({abs, how, why, {}});
  }

  // `path` and, when it is reached through links, the folder it resolves to (a job may use
  // either name: /usr/local/cuda and /usr/local/cuda-13.0).
  void add_resolved(const fs::path& path, const std::string& why) {
    add(path, access::read_only, why);
    std::error_code ec;
    if (const auto real = canonical_or_same(path); real != fs::absolute(path, ec).lexically_normal())
      add(real, access::read_only, why);
  }

  // A top-level entry of the system: a link stays a link (merged /usr), a folder is shown.
  void add_system(const fs::path& path, const std::string& why) {
    std::error_code ec;
    if (fs::is_symlink(path, ec)) {
      entries.push_back({path, access::symlink, why, fs::read_symlink(path, ec)});
      return;
    }
    if (fs::exists(path, ec)) entries.push_back({path, access::read_only, why, {}});
  }

  bool shown(const fs::path& p) const {
    return std::any_of(entries.begin(), entries.end(), [&](const sandbox_mount& m) {
      return (m.how == access::read_only || m.how == access::writable) && (m.path == p || is_within(p, m.path));
    });
  }

  std::vector<fs::path> refused;
};

void add_system_files(view_builder& v) {
  v.add_system("/usr", "the system's programs and libraries: compilers, the loader, Python, /usr/local's CUDA");
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"})
    v.add_system(top, "the system's programs and libraries (a link into /usr on a merged-/usr system)");
  // /etc only in part: what the loader and the C library read, not the machine's configuration.
  for (const char* f : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload"})
    v.add_system(f, "the loader's list of library folders");
  v.add_system("/etc/alternatives", "cc, c++, python and others are links through it");
  for (const char* f : {"/etc/passwd", "/etc/group", "/etc/nsswitch.conf"})
    v.add_system(f, "a tool that asks who it runs as (ncu, getpwuid) fails without it");
  for (const char* f : {"/etc/hosts", "/etc/host.conf"})
    v.add_system(f, "'localhost', which ncu's processes talk over inside the job's own network");
  for (const char* f : {"/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/lsb-release", "/etc/mtab"})
    v.add_system(f, "time zone, the OS's name, the mount table: read by ncu, PyTorch and the C library");
  v.add_system("/sys", "the GPU driver and PyTorch read the PCI topology and the CPU count here");
}

void add_toolchains(view_builder& v) {
  const std::string cuda_why = "the CUDA toolkit: nvcc, its headers, the runtime candidates link";
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const auto dir = env(var); !dir.empty()) v.add_resolved(dir, cuda_why + " ($" + var + ")");
  v.add_resolved("/usr/local/cuda", cuda_why);
  if (const auto nvcc = tool_on_path("nvcc"); !nvcc.empty()) v.add_resolved(install_root(nvcc), cuda_why + " (nvcc on PATH)");
  if (const auto ncu = tool_on_path("ncu"); !ncu.empty())
    for (const auto& dir : ncu_folders(ncu)) v.add_resolved(dir, "Nsight Compute: ncu profiles candidates (ncu on PATH)");
  for (const char* var : {"CC", "CXX"})
    if (const auto cc = env(var); !cc.empty())
      if (const auto tool = cc.find('/') == std::string::npos ? tool_on_path(cc) : canonical_or_same(cc); !tool.empty())
        v.add_resolved(install_root(tool), std::string("the host compiler ($") + var + ")");
  for (const auto& dir : split_colons(env("LD_LIBRARY_PATH")))
    v.add_resolved(dir, "a library folder the job's $LD_LIBRARY_PATH names");
  if (const auto dl = env("KBLASTER_DLPACK_INCLUDE"); !dl.empty())
    v.add_resolved(dl, "dlpack.h, which candidates are compiled against ($KBLASTER_DLPACK_INCLUDE)");
  // The user's own word, for a toolchain this list cannot find (a conda environment).
  for (const auto& dir : split_colons(env("KBLASTER_SANDBOX_ALLOW")))
    v.add_resolved(dir, "allowed by you ($KBLASTER_SANDBOX_ALLOW)");
}

}  // namespace

bool sandbox_too_broad(const fs::path& path) {
  const auto p = fs::absolute(path).lexically_normal();
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;  // a file shows only itself
  std::vector<fs::path> private_roots{"/home", "/root", "/tmp", "/var/tmp", "/work", "/srv", "/mnt", "/media", "/opt", "/var", "/run"};
  for (const auto& h : home_folders()) private_roots.push_back(h);
  if (const auto tmp = env("TMPDIR"); !tmp.empty()) private_roots.push_back(canonical_or_same(tmp));
  try {
    private_roots.push_back(user_scratch_root());
  } catch (const std::exception&) {
    // No scratch root to protect.
  }
  // Too broad: it is one of those, or holds one (`/` holds them all).
  return std::any_of(private_roots.begin(), private_roots.end(),
                     [&](const fs::path& root) { return root == p || is_within(root, p); });
}

std::vector<fs::path> program_folders(const fs::path& program) {
  std::vector<fs::path> out{canonical_or_same(program).parent_path()};
  for (auto dir : elf_runpath(canonical_or_same(program))) {
    // LibTorch from a wheel: torch/lib's own RUNPATH reaches ../../nvidia/*/lib beside it.
    fs::path packages;
    for (fs::path prefix; const auto& part : dir) {
      prefix /= part;
      if (part == "site-packages" || part == "dist-packages") packages = prefix;
    }
    out.push_back(packages.empty() ? dir : packages);
  }
  return out;
}

std::vector<fs::path> ncu_folders(const fs::path& ncu, const fs::path& standalone) {
  const auto root = install_root(canonical_or_same(ncu));
  std::vector<fs::path> out{root};
  // A toolkit's ncu is a script: with no nsight-compute-* beside the toolkit, it runs the one
  // installed under /opt/nvidia (as on machines where Nsight Compute came on its own); hidden,
  // ncu says "Nsight Compute is not installed on your system" and every profile fails.
  std::error_code ec;
  const bool toolkit = fs::exists(root / "bin" / "nvcc", ec);
  bool beside = false;
  for (const auto& entry : fs::directory_iterator(root, ec))
    beside |= entry.path().filename().string().rfind("nsight-compute", 0) == 0;
  if (toolkit && !beside && fs::is_directory(standalone, ec)) out.push_back(standalone);
  return out;
}

std::vector<fs::path> folders_read_by_compile(const std::vector<std::string>& argv) {
  std::vector<fs::path> out;
  if (argv.empty()) return out;
  const auto& compiler = argv.front();
  if (const auto tool = compiler.find('/') == std::string::npos ? tool_on_path(compiler) : canonical_or_same(compiler); !tool.empty())
    out.push_back(install_root(tool));
  std::error_code ec;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const auto& a = argv[i];
    for (const std::string flag : {"-I", "-isystem"}) {
      if (a == flag && i + 1 < argv.size()) out.push_back(argv[i + 1]);
      else if (a.size() > flag.size() && a.rfind(flag, 0) == 0 && a.find('=') == std::string::npos) out.push_back(a.substr(flag.size()));
    }
    // A source: itself (a file is never too broad) and its folder (a folder that is too broad,
    // the home folder itself, is left out by the view).
    if (a.front() != '-' && fs::is_regular_file(a, ec)) {
      out.push_back(fs::absolute(a, ec));
      out.push_back(fs::absolute(a, ec).parent_path());
    }
  }
  return out;
}

std::vector<sandbox_mount> sandbox_system_view(bool gpu) {
  view_builder v;
  add_system_files(v);
  v.entries.push_back({"/dev", access::empty, "a private /dev: null, zero, random, the terminal's, shm", {}});
  std::error_code ec;
  if (gpu)
    for (const auto& entry : fs::directory_iterator("/dev", ec))
      if (entry.path().filename().string().rfind("nvidia", 0) == 0)
        v.entries.push_back({entry.path(), access::device, "the GPU", {}});
  v.entries.push_back({"/proc", access::empty, "its own /proc: only its own processes", {}});
  v.entries.push_back({"/tmp", access::empty, "a private, empty /tmp: nothing the user or another job left there", {}});
  add_toolchains(v);
  return v.entries;
}

std::vector<sandbox_mount> sandbox_view(const sandbox_policy& policy) {
  view_builder v;
  v.entries = sandbox_system_view(policy.gpu);
  for (const auto& r : policy.readable) v.add_resolved(r, "the job's own input (its caller names it)");
  v.add(policy.scratch, access::writable, "the job's scratch folder: its HOME and TMPDIR");
  for (const auto& w : policy.writable) v.add(w, access::writable, "a folder the job writes (its caller names it)");
  // Defense in depth: a secret inside something shown (a venv under the home folder) is hidden.
  for (const auto& secret : sandbox_hidden_paths()) {
    const auto inside = std::any_of(v.entries.begin(), v.entries.end(), [&](const sandbox_mount& m) {
      return (m.how == access::read_only || m.how == access::writable) && (m.path == secret || is_within(secret, m.path));
    });
    std::error_code ec;
    if (inside) v.entries.push_back({secret, fs::is_directory(secret, ec) ? access::empty : access::hidden, "a secret", {}});
  }
  return v.entries;
}

std::vector<fs::path> sandbox_hidden_paths() {
  std::vector<fs::path> out;
  std::error_code ec;
  if (const auto home = env("HOME"); !home.empty()) {
    for (const char* rel : {".ssh", ".gnupg", ".aws", ".azure", ".config", ".netrc", ".git-credentials", ".docker",
                            ".kube", ".npmrc", ".pypirc", ".bash_history", ".zsh_history", ".python_history",
                            ".local/share/keyrings", ".password-store", ".vault-token"}) {
      const fs::path p = fs::path(home) / rel;
      if (fs::exists(fs::symlink_status(p, ec))) out.push_back(p);
    }
  }
  // The daemon's sockets (a job that reached them could drive the daemon) and other per-user
  // runtime files.
  if (const auto run = env("XDG_RUNTIME_DIR"); !run.empty() && fs::is_directory(run, ec)) out.push_back(run);
  if (fs::is_directory("/run/user", ec)) out.push_back("/run/user");
  return out;
}

}  // namespace kblaster::support
