// Whole-file reads and atomic writes; the per-user scratch folder.
#include "support/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  static std::atomic<unsigned> sequence{0};
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  // Unique per process and call, in the same folder so that the rename is atomic.
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(sequence++);
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

fs::path user_scratch_root() {
  std::error_code ec;
  const fs::path root = fs::temp_directory_path(ec) / ("kblaster-" + std::to_string(::getuid()));
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
    throw file_error("cannot create " + root.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    throw file_error(root.string() + " is not a folder of this user's: remove it or set TMPDIR");
  if ((st.st_mode & 077) != 0) ::chmod(root.c_str(), 0700);
  return root;
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
