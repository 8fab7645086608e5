// Helpers for the KB tests: temporary directories, file contents, and a KB with known contents.
#pragma once

#include "kb/knowledge_base.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

namespace kb_test {

namespace fs = std::filesystem;

/// A fresh directory under /tmp, removed with everything in it at the end of the scope.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "kblaster-kb-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// Makes a file or directory unwritable for the life of the scope. Permission bits do not stop
/// root, so as root the immutable attribute is used (needs CAP_LINUX_IMMUTABLE); ok() is false
/// when neither works.
class unwritable {
 public:
  explicit unwritable(fs::path p) : path_(std::move(p)) {
    if (::geteuid() != 0) {
      fs::permissions(path_, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
      ok_ = ::access(path_.c_str(), W_OK) != 0;
      return;
    }
    set_immutable(true);
    ok_ = ::access(path_.c_str(), W_OK) != 0;
  }
  ~unwritable() {
    if (::geteuid() == 0) set_immutable(false);
    else fs::permissions(path_, fs::perms::owner_write, fs::perm_options::add);
  }
  unwritable(const unwritable&) = delete;
  unwritable& operator=(const unwritable&) = delete;
  bool ok() const { return ok_; }

 private:
  void set_immutable(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return;
    int flags = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
    }
    ::close(fd);
  }
  fs::path path_;
  bool ok_ = false;
};

/// The PostgreSQL server the tests run against instead of files (test_kb_pg, started by
/// tests/kb/pg_cluster.sh), or empty for files.
inline std::string server_host() {
  const char* h = std::getenv("KBLASTER_TEST_PG_HOST");
  return h ? h : "";
}

/// The URI of database `name` on the test server.
inline std::string server_uri(const std::string& name) {
  const char* user = std::getenv("KBLASTER_TEST_PG_USER");
  return "postgresql:///" + name + "?host=" + server_host() + "&user=" + (user ? user : "postgres");
}

/// Where a test's KB at `p` lives: the file itself, or (under test_kb_pg) a database on the test
/// server named after the path, created empty on first use, so that a test reopening its path
/// reopens its database.
inline fs::path kb_at(const fs::path& p) {
  if (server_host().empty()) return p;
  static std::set<std::string> created;
  const std::string name = "t" + std::to_string(std::hash<std::string>{}(p.string()));
  if (created.insert(name).second) {
    auto admin = kblaster::kb::sql::database::connect_postgres(server_uri("postgres"));
    admin.exec("DROP DATABASE IF EXISTS " + name);
    admin.exec("CREATE DATABASE " + name);
  }
  return server_uri(name);
}

/// True when the tests run against a server (file-only checks are skipped there).
inline bool on_server() { return !server_host().empty(); }

/// Opens the KB of `p` (see kb_at).
inline kblaster::kb::knowledge_base open_kb(const fs::path& p, const kblaster::kb::open_options& o = {}) {
  return kblaster::kb::knowledge_base::open(kb_at(p), o);
}

/// Opens a KB without the seed.
inline kblaster::kb::knowledge_base open_empty(const fs::path& p) {
  kblaster::kb::open_options o;
  o.seed = false;
  return open_kb(p, o);
}

/// A correct attempt of `technique` in `state` with the given speedup.
inline kblaster::kb::attempt make_attempt(const std::string& state, const std::string& technique,
                                          double speedup, const std::string& arch = "sm_80") {
  kblaster::kb::attempt a;
  a.task = "task/add";
  a.trajectory = "t0";
  a.state_before = state;
  a.technique = technique;
  a.compile_ok = true;
  a.correct = true;
  a.measured_speedup = speedup;
  a.arch = arch;
  a.gpu_name = "NVIDIA A100";
  return a;
}

/// A failed attempt (compile failure).
inline kblaster::kb::attempt failed_attempt(const std::string& state, const std::string& technique) {
  auto a = make_attempt(state, technique, 1.0);
  a.compile_ok = false;
  a.correct = false;
  a.measured_speedup.reset();
  return a;
}

/// Adds a state and techniques with priors, through the public API.
inline void add_state(kblaster::kb::knowledge_base& kb, const std::string& name,
                      const std::vector<std::pair<std::string, double>>& techniques,
                      const std::string& primary = "memory_bound_dram") {
  kblaster::kb::update_cause cause{"manual", "test", {}};
  kblaster::kb::state s;
  s.name = name;
  s.primary_bottleneck = primary;
  kb.put_state(s, cause);
  for (const auto& [t, prior] : techniques) {
    if (!kb.find_technique(t)) kb.put_technique({0, t, "test", "do " + t}, cause);
    kb.put_optimization(name, t, prior, "", cause);
  }
}

}  // namespace kb_test
