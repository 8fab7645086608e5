// Opening a second connection to a KB must not drop the locks the first one holds (issue 50: a
// KB damaged by two GPU workers). Closing any descriptor of a file drops every POSIX lock the
// process holds on it; SQLite's VFS knows and keeps its own descriptors open, a plain read of the
// header did not. Another process asks the kernel (F_GETLK) whether it could take the lock bytes
// that SQLite's shared locks live in: it must not, while this process has a connection open.
#include "kb_test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using kb_test::temp_dir;

namespace {

// SQLite's lock bytes in a database file (os_unix.c): PENDING_BYTE is 0x40000000, the shared
// range starts two bytes after it and spans 510 bytes.
constexpr off_t shared_first = 0x40000002;
constexpr off_t shared_size = 510;

// Whether another process could write-lock the shared range now (no process holds it).
bool lockable_from_another_process(const std::filesystem::path& file) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(file.c_str(), O_RDWR);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = shared_first;
    fl.l_len = shared_size;
    const bool free = fd >= 0 && ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
    std::_Exit(free ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("opening and closing a second connection keeps the first connection's locks") {
  temp_dir dir;
  const auto path = dir / "kb.sqlite";
  auto first = kblaster::kb::knowledge_base::open(path);
  // A read in WAL mode: the connection keeps its shared lock on the database file afterwards.
  first.summary();
  REQUIRE_FALSE(lockable_from_another_process(path));
  for (int i = 0; i < 3; ++i) {
    auto second = kblaster::kb::knowledge_base::open(path);  // reads the header, then SQLite opens it
    second.summary();
  }
  CHECK_FALSE(lockable_from_another_process(path));
}
