// Starting, talking to and ending kblaster-runner.
#include "harness/runner_process.h"

#include "harness/shared_arena.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

namespace kblaster::harness {

std::string runner_reply::lost_check() const {
  if (how == outcome::timed_out) return "hang";
  if (signal == SIGABRT) return "abort";
  if (signal == SIGKILL) return "out_of_memory";  // not ours (we only kill after a timeout): the OOM killer
  if (signal != 0) return "crash";
  return "crash";
}

std::string runner_reply::lost_reason(const std::string& during) const {
  if (wrapped && how == outcome::died)
    return "the candidate's runner, under ncu, ended during " + during + " (ncu's log says how); the harness goes on";
  if (how == outcome::timed_out)
    return "the candidate did not return within the deadline during " + during +
           " (a kernel that never ends?); its runner was killed, the harness goes on";
  if (signal != 0)
    return "the candidate's runner died of signal " + std::to_string(signal) + " (" + strsignal(signal) + ") during " +
           during + (signal == SIGKILL ? " (out of memory?)" : "") + "; the harness goes on";
  return "the candidate's runner exited with status " + std::to_string(exit_code) + " during " + during +
         " (the candidate called exit?); the harness goes on";
}

std::string runner_program() {
  if (const char* env = std::getenv("KBLASTER_RUNNER"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto next_to_us = self.parent_path() / "kblaster-runner";
  if (ec || !std::filesystem::exists(next_to_us))
    throw std::runtime_error("kblaster-runner is not next to the harness (" + next_to_us.string() +
                             "): candidates run only in their own runner process");
  return next_to_us.string();
}

runner_process::runner_process(const std::string& program, const std::string& device) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  // posix_spawn (a vfork underneath), not fork: the judge's address space holds the CUDA
  // driver's large mappings and LibTorch's threads, which a fork would copy page by page.
  // fd 0: nothing; 1 and 2: the judge's stderr (never its protocol channel); 3: the socket;
  // nothing else (the protocol's stdout is close-on-exec, and everything from 4 up is closed).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);  // dup2 clears close-on-exec on the copy
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  const std::string judge = std::to_string(::getpid());
  const char* argv[] = {program.c_str(), "--device", device.c_str(), "--fd", "3", "--judge", judge.c_str(), nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (err != 0) {
    ::close(sv[0]);
    throw std::runtime_error("starting " + program + ": " + std::strerror(err));
  }
  pid_ = pid;
  fd_ = sv[0];
}

runner_process::runner_process(const std::string& program, const std::string& device, const runner_wrapper& wrapper) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (wrapper.socket_path.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("the runner's socket path is too long for a Unix socket: " + wrapper.socket_path);
  std::memcpy(addr.sun_path, wrapper.socket_path.c_str(), wrapper.socket_path.size() + 1);
  ::unlink(wrapper.socket_path.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 1) != 0) {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("listening on " + wrapper.socket_path + ": " + why);
  }
  socket_path_ = wrapper.socket_path;
  wrapped_ = true;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, wrapper.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<std::string> args = wrapper.argv;
  args.insert(args.end(), {program, "--device", device, "--connect", wrapper.socket_path});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(socket_path_.c_str());
    throw std::runtime_error("starting " + args.front() + ": " + std::strerror(err));
  }
  pid_ = pid;
}

runner_process::~runner_process() {
  kill();
  if (fd_ >= 0) ::close(fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
}

namespace {

// Whether every thread of process `pid` has exited: its /proc entry gone, or each of its tasks a
// zombie (Z) or dead (X). A process whose threads have all exited has closed its descriptors,
// the GPU's among them; one that merely closed a socket has not. Empty when /proc cannot say.
std::optional<bool> threads_all_exited(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return true;
    return std::nullopt;
  }
  bool exited = true;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::FILE* f = std::fopen((dir + "/" + e->d_name + "/stat").c_str(), "r");
    if (!f) continue;  // that thread is gone
    char buf[512] = {};
    const std::size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    // "tid (comm) S ...": the state follows the last ')' (a comm may hold parentheses).
    const char* close = static_cast<const char*>(::memrchr(buf, ')', got));
    const char state = close && close + 2 < buf + got ? close[2] : '?';
    if (state != 'Z' && state != 'X') {
      exited = false;
      break;
    }
  }
  ::closedir(d);
  return exited;
}

}  // namespace

std::string runner_process::accept_runner(deadline until) {
  while (fd_ < 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "the runner did not connect before the deadline";
    int st = 0;
    if (pid_ > 0 && ::waitpid(pid_, &st, WNOHANG) == pid_) {
      wait_status_ = st;
      pid_ = -1;
      return WIFEXITED(st) ? "the wrapped runner exited with status " + std::to_string(WEXITSTATUS(st)) + " before it connected"
                           : "the wrapped runner died of signal " + std::to_string(WTERMSIG(st)) + " before it connected";
    }
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 100))) <= 0) continue;
    fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  }
  // Who connected, as the kernel saw it at connect(), before any candidate was loaded: the
  // runner whose exit quit_and_await_close() waits for.
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred)) peer_pid_ = cred.pid;
  ::close(listen_fd_);
  listen_fd_ = -1;
  ::unlink(socket_path_.c_str());
  socket_path_.clear();
  return {};
}

void runner_process::kill() {
  if (pid_ <= 0) return;
  // A wrapped runner is the wrapper's child: killing the wrapper alone would leave it running.
  if (wrapped_ && peer_pid_ > 0 && !threads_all_exited(peer_pid_).value_or(false)) ::kill(peer_pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

runner_reply runner_process::lost(runner_reply::outcome how) {
  runner_reply r;
  r.how = how;
  if (wrapped_ && how == runner_reply::outcome::died) {
    // The process here is the wrapper, not the runner: it is left to finish and say why
    // (quit_and_wait), and its status is not the runner's.
    r.wrapped = true;
    return r;
  }
  if (pid_ > 0) {
    if (how == runner_reply::outcome::died) {
      // It closed the socket: it is dying. Give it a moment to be reaped with its real cause.
      for (int i = 0; i < 200; ++i) {
        int st = 0;
        const pid_t got = ::waitpid(pid_, &st, WNOHANG);
        if (got == pid_) {
          wait_status_ = st;
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    kill();
  }
  if (how == runner_reply::outcome::died) {
    if (WIFSIGNALED(wait_status_)) r.signal = WTERMSIG(wait_status_);
    if (WIFEXITED(wait_status_)) r.exit_code = WEXITSTATUS(wait_status_);
  }
  return r;
}

runner_reply runner_process::receive(deadline until) {
  runner_reply r;
  auto* p = reinterpret_cast<char*>(&r.body);
  std::size_t need = sizeof(r.body);
  while (need > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return lost(runner_reply::outcome::timed_out);
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t got = ::read(fd_, p, need);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return lost(runner_reply::outcome::died);
    p += got;
    need -= static_cast<std::size_t>(got);
  }
  if (r.body.magic != runner::protocol_magic) {
    // Not the runner's own words: something wrote into the socket. Trust nothing further.
    kill();
    r.body = runner::reply{};
    r.body.result = runner::status::bad_request;
    std::snprintf(r.body.message, sizeof(r.body.message), "the runner's reply was garbled");
  }
  r.body.message[sizeof(r.body.message) - 1] = '\0';
  return r;
}

runner_reply runner_process::exchange(const runner::request_header& h, const void* payload, std::size_t payload_bytes,
                                      int send_fd, deadline until) {
  if (pid_ <= 0) return lost(runner_reply::outcome::died);
  const auto* head = reinterpret_cast<const char*>(&h);
  std::vector<char> bytes(head, head + sizeof(h));
  const auto* body = static_cast<const char*>(payload);
  if (payload_bytes) bytes.insert(bytes.end(), body, body + payload_bytes);
  std::size_t sent = 0;
  bool fd_sent = send_fd < 0;
  while (sent < bytes.size()) {
    iovec iov{bytes.data() + sent, bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (!fd_sent) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &send_fd, sizeof(int));
    }
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return lost(runner_reply::outcome::died);
    fd_sent = true;
    sent += static_cast<std::size_t>(n);
  }
  return receive(until);
}

std::string runner_process::ready(deadline until) {
  if (started_) return start_error_;
  started_ = true;
  if (listen_fd_ >= 0)
    if (start_error_ = accept_runner(until); !start_error_.empty()) return start_error_;
  const auto r = receive(until);
  if (!r.replied()) start_error_ = r.lost_reason("its start-up");
  else if (r.body.result != runner::status::ok) start_error_ = r.body.message;
  else filter_state_ = r.body.message;
  return start_error_;
}

runner_reply runner_process::load(const std::string& library, deadline until) {
  runner::request_header h;
  h.kind = runner::op::load;
  h.payload_bytes = static_cast<std::uint32_t>(library.size() + 1);
  return exchange(h, library.c_str(), library.size() + 1, -1, until);
}

runner_reply runner_process::map(const shared_arena& arena, deadline until) {
  runner::request_header h;
  h.kind = runner::op::map;
  h.arena_bytes = arena.bytes();
  return exchange(h, nullptr, 0, arena.fd(), until);
}

runner_reply runner_process::call(const std::vector<runner::tensor_desc>& descs, int n_in, int n_out, bool two_phase,
                                  deadline until) {
  runner::request_header h;
  h.kind = runner::op::call;
  h.n_in = static_cast<std::uint32_t>(n_in);
  h.n_out = static_cast<std::uint32_t>(n_out);
  h.flags = two_phase ? runner::flag_two_phase : 0;
  h.payload_bytes = static_cast<std::uint32_t>(descs.size() * sizeof(runner::tensor_desc));
  return exchange(h, descs.data(), h.payload_bytes, -1, until);
}

runner_reply runner_process::batch_call(const std::vector<runner::tensor_desc>& first,
                                        const std::vector<std::uint64_t>& slot_stride, int n_in, int n_out, int calls,
                                        bool empty, double spin_ms, deadline until) {
  runner::request_header h;
  h.kind = empty ? runner::op::noop : runner::op::call;
  h.spin_ns = empty && spin_ms > 0 ? static_cast<std::uint64_t>(std::min(spin_ms, 1000.0) * 1e6) : 0;
  h.n_in = static_cast<std::uint32_t>(n_in);
  h.n_out = static_cast<std::uint32_t>(n_out);
  h.calls = static_cast<std::uint32_t>(calls);
  std::vector<char> payload(first.size() * sizeof(runner::tensor_desc));
  std::memcpy(payload.data(), first.data(), payload.size());
  if (calls > 1) {
    const auto* s = reinterpret_cast<const char*>(slot_stride.data());
    payload.insert(payload.end(), s, s + slot_stride.size() * sizeof(std::uint64_t));
  }
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  return exchange(h, payload.data(), payload.size(), -1, until);
}

runner_reply runner_process::profiled_call(const std::vector<runner::tensor_desc>& descs, int n_in, int n_out,
                                           deadline until) {
  runner::request_header h;
  h.kind = runner::op::call;
  h.n_in = static_cast<std::uint32_t>(n_in);
  h.n_out = static_cast<std::uint32_t>(n_out);
  h.flags = runner::flag_profile;
  h.payload_bytes = static_cast<std::uint32_t>(descs.size() * sizeof(runner::tensor_desc));
  return exchange(h, descs.data(), h.payload_bytes, -1, until);
}

int runner_process::quit_and_wait(deadline until) {
  if (pid_ <= 0) return wait_status_;
  if (fd_ >= 0) {
    runner::request_header h;
    h.kind = runner::op::quit;
    (void)!::send(fd_, &h, sizeof(h), MSG_NOSIGNAL);
  }
  while (std::chrono::steady_clock::now() < until) {
    int st = 0;
    const pid_t got = ::waitpid(pid_, &st, WNOHANG);
    if (got == pid_) {
      wait_status_ = st;
      pid_ = -1;
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  return -1;
}

bool runner_process::quit_and_await_close(deadline until) {
  if (pid_ <= 0 || fd_ < 0) return pid_ <= 0;
  runner::request_header h;
  h.kind = runner::op::quit;
  (void)!::send(fd_, &h, sizeof(h), MSG_NOSIGNAL);
  // The runner sends nothing after quit; whatever it does send is read and dropped.
  char sink[256];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = ::read(fd_, sink, sizeof(sink));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // closed
  }
  // A closed socket is not yet an ended runner: a candidate can close it and go on running
  // kernels. Gone is every thread of the process that connected exited.
  // Where neither its pid nor /proc can say, the caller waits for the wrapper as before.
  if (peer_pid_ <= 0) return false;
  for (;;) {
    const auto exited = threads_all_exited(peer_pid_);
    if (!exited) return false;
    if (*exited) break;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::close(fd_);
  fd_ = -1;
  return true;
}

runner_reply runner_process::finish(deadline until) {
  runner::request_header h;
  h.kind = runner::op::finish;
  return exchange(h, nullptr, 0, -1, until);
}

int runner_process::threads() const {
  if (pid_ <= 0) return -1;
  DIR* d = ::opendir(("/proc/" + std::to_string(pid_) + "/task").c_str());
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

long long runner_process::cpu_ns() const {
  if (pid_ <= 0) return -1;
  const std::string dir = "/proc/" + std::to_string(pid_) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  long long total = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::FILE* f = std::fopen((dir + "/" + e->d_name + "/schedstat").c_str(), "r");
    if (!f) continue;
    long long on_cpu = 0;
    if (std::fscanf(f, "%lld", &on_cpu) == 1) total += on_cpu;
    std::fclose(f);
  }
  ::closedir(d);
  return total;
}

}  // namespace kblaster::harness
