// POSIX child processes with captured output and a deadline.
#include "engine/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kblaster::engine {

std::string find_in_path(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string p(path);
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (executable(candidate)) return candidate;
    }
    start = end + 1;
  }
  return {};
}

process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           const std::optional<std::string>& cwd, std::stop_token stop) {
  process_result r;
  const auto started = std::chrono::steady_clock::now();
  if (argv.empty()) {
    r.failed_to_start = true;
    r.err = "empty command";
    return r;
  }
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC) || ::pipe2(exec_pipe, O_CLOEXEC)) {
    r.failed_to_start = true;
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a timeout kills its children too
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (cwd && ::chdir(cwd->c_str()) != 0) {
      int e = errno;
      (void)!::write(exec_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvp(args[0], args.data());
    int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (pid < 0) {
    r.failed_to_start = true;
    r.err = std::string("fork: ") + std::strerror(errno);
    ::close(out_pipe[0]); ::close(err_pipe[0]); ::close(exec_pipe[0]);
    return r;
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(exec_pipe[0]);

  const auto deadline = started + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    if (stop.stop_requested()) {
      r.cancelled = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    // A cancellable run wakes often enough to notice a stop promptly.
    const long long wake_ms = stop.stop_possible() ? 100 : 1000;
    const int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), wake_ms)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
      else { ::close(fds[i].fd); fds[i].fd = -1; --open_fds; }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (exec_failed) {
    r.failed_to_start = true;
    r.exit_code = exec_errno;
    r.err = "cannot run " + argv[0] + ": " + std::strerror(exec_errno);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status) && !r.timed_out) {
    r.signal = WTERMSIG(status);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace kblaster::engine
