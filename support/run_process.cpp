// A child process run to completion with captured output and a deadline.
#include "support/run_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kblaster::support {

process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           const std::optional<std::string>& cwd, std::stop_token stop) {
  process_result r;
  const auto started = std::chrono::steady_clock::now();
  spawn_options options;
  if (cwd) options.cwd = *cwd;
  std::optional<child_process> spawned;
  try {
    spawned.emplace(child_process::spawn(argv, options));
  } catch (const spawn_error& e) {
    r.failed_to_start = true;
    r.exit_code = e.code();
    r.err = e.what();
    return r;
  }
  auto& child = *spawned;

  const auto deadline = started + timeout;
  pollfd fds[2] = {{child.stdout_fd(), POLLIN, 0}, {child.stderr_fd(), POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    if (stop.stop_requested()) {
      r.cancelled = true;
      break;
    }
    // A cancellable run wakes often enough to notice a stop promptly.
    const long long wake_ms = stop.stop_possible() ? 100 : 1000;
    const int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), wake_ms)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
      } else {
        i == 0 ? child.close_stdout() : child.close_stderr();
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  const int status = r.timed_out || r.cancelled ? child.kill_and_wait() : child.wait();
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status) && !r.timed_out && !r.cancelled) {
    r.signal = WTERMSIG(status);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace kblaster::support
