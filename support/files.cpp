// Whole-file reads and atomic writes; the per-user scratch folder.
#include "support/files.h"

#include "support/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::support {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw file_error("cannot read " + path.string());
  return s.str();
}

std::optional<std::string> read_file_if_exists(const fs::path& path) {
  try {
    return read_file(path);
  } catch (const file_error&) {
    return std::nullopt;
  }
}

fs::path temporary_sibling(const fs::path& path) {
  static std::atomic<unsigned> sequence{0};
  return path.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(sequence++);
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  // In the same folder, so that the rename is atomic.
  const fs::path tmp = temporary_sibling(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw file_error("cannot write " + path.string() + ": " + std::strerror(errno));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw file_error("cannot write " + path.string() + ": " + ec.message());
  }
}

void write_secret_file(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = temporary_sibling(path);
  const auto fail = [&](const std::string& why) {
    fs::remove(tmp, ec);
    return file_error("cannot write " + path.string() + ": " + why);
  };
  {
    // O_EXCL: a name planted beforehand (a link to elsewhere) is refused, not followed.
    unique_fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out) throw fail(std::strerror(errno));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(out.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw fail(std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) throw fail(ec.message());
}

fs::path private_directory(const fs::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path() && !fs::exists(dir.parent_path(), ec)) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw file_error("cannot create " + dir.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw file_error(dir.string() + " is not a folder: remove it");
  if (st.st_uid != ::geteuid()) throw file_error(dir.string() + " belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw file_error(dir.string() + " is open to other users and cannot be closed: " + std::strerror(errno));
  return dir;
}

fs::path user_scratch_root() {
  std::error_code ec;
  const fs::path root = fs::temp_directory_path(ec) / ("kblaster-" + std::to_string(::getuid()));
  try {
    return private_directory(root);
  } catch (const file_error& e) {
    throw file_error(std::string(e.what()) + " (the scratch folder; or set TMPDIR)");
  }
}

fs::path user_runtime_dir() {
  // XDG_RUNTIME_DIR is the user's own 0700 folder where a session manager made one; a daemon
  // started elsewhere (ssh without systemd, a container) falls back to the scratch folder.
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run && fs::path(run).is_absolute())
    return private_directory(fs::path(run) / "kblaster");
  return private_directory(user_scratch_root() / "run");
}

void remove_entries_older_than(const fs::path& dir, std::chrono::hours age) {
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - age;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    const auto when = it->last_write_time(e);
    if (!e && when < cutoff) fs::remove_all(it->path(), e);
  }
}

}  // namespace kblaster::support
