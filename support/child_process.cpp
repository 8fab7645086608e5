// posix_spawn with pipes, a process group and a registry of live children.
#include "support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

extern char** environ;

namespace kblaster::support {

namespace {

// The children not yet reaped, with whether each leads its own process group. A pid is erased
// before it is reaped (the zombie keeps it from being reused meanwhile), so a kill through this
// list never reaches an unrelated process.
struct registry {
  std::mutex mutex;
  std::map<pid_t, bool> live;
  bool stopped = false;
};

registry& children() {
  static registry r;
  return r;
}

void send(pid_t pid, bool own_group, int sig) {
  if (pid > 0) ::kill(own_group ? -pid : pid, sig);
}

// Waits for `pid` to end without reaping it (WNOWAIT), takes it off the list, then reaps it.
std::optional<int> reap(pid_t pid, bool block) {
  siginfo_t info{};
  int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, flags) < 0) {
    if (errno != EINTR) return -1;  // not our child any more: nothing to wait for
  }
  if (!block && info.si_pid == 0) return std::nullopt;
  {
    std::lock_guard lock(children().mutex);
    children().live.erase(pid);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return status;
}

// The thread every child is started from. To the kernel a child's parent is the thread that
// started it, not the process: PR_SET_PDEATHSIG, which bwrap's --die-with-parent sets on every
// sandboxed job, fires when that thread ends. A warm harness started by one of the optimizer's
// worker threads was killed (SIGKILL) the moment that thread finished its trajectories, while
// another thread was evaluating on it (issue 35). Started from here, a child dies with the
// process, never with whichever thread happened to start it. Created on first use and never
// destroyed (its thread runs until the process exits, so nothing here may be torn down under it).
class spawner {
 public:
  static spawner& instance() {
    static spawner* s = new spawner;  // leaked on purpose: see above
    return *s;
  }

  // Runs `job` on the spawner's thread and waits for it; its exception comes back here. In a
  // process forked from ours (the thread does not exist there), `job` runs on the caller.
  void run(const std::function<void()>& job) {
    if (::getpid() != owner_) return job();
    std::exception_ptr error;
    bool done = false;
    std::unique_lock lock(mutex_);
    jobs_.push_back([&] {
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard inner(mutex_);
      done = true;
      finished_.notify_all();
    });
    queued_.notify_one();
    finished_.wait(lock, [&] { return done; });
    if (error) std::rethrow_exception(error);
  }

 private:
  spawner() : owner_(::getpid()) { std::thread([this] { loop(); }).detach(); }

  void loop() {
    // Signals sent to the process go to the threads that handle them, never to this one.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock lock(mutex_);
    while (true) {
      queued_.wait(lock, [&] { return !jobs_.empty(); });
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<std::function<void()>> jobs_;
};

struct pipe_pair {
  int parent = -1, child = -1;
};

class spawn_setup {
 public:
  spawn_setup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
    for (auto& p : pipes_) {
      if (p.child >= 0) ::close(p.child);
      if (p.parent >= 0) ::close(p.parent);
    }
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;

  // Sets up standard stream `fd` of the child; the parent's pipe end, or -1.
  void stream_for(int fd, stream how, pipe_pair& p) {
    if (how == stream::null) {
      check(posix_spawn_file_actions_addopen(&actions_, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0), "addopen");
    } else if (how == stream::pipe) {
      int ends[2];
      if (::pipe2(ends, O_CLOEXEC) != 0) throw spawn_error(errno, std::string("pipe: ") + std::strerror(errno));
      const bool child_reads = fd == 0;
      p.child = child_reads ? ends[0] : ends[1];
      p.parent = child_reads ? ends[1] : ends[0];
      check(posix_spawn_file_actions_adddup2(&actions_, p.child, fd), "adddup2");
    }
  }

  void options(const spawn_options& o) {
    pipes_.resize(3);
    stream_for(0, o.in, pipes_[0]);
    stream_for(1, o.out, pipes_[1]);
    stream_for(2, o.err, pipes_[2]);
    if (o.cwd) check(posix_spawn_file_actions_addchdir_np(&actions_, o.cwd->c_str()), "addchdir");
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    check(posix_spawnattr_setsigmask(&attr_, &none), "setsigmask");
    check(posix_spawnattr_setsigdefault(&attr_, &all), "setsigdefault");
    if (o.own_process_group) {
      flags |= POSIX_SPAWN_SETPGROUP;
      check(posix_spawnattr_setpgroup(&attr_, 0), "setpgroup");
    }
    check(posix_spawnattr_setflags(&attr_, flags), "setflags");
  }

  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }
  // Hands the parent's ends over and closes the child's.
  int take_parent(int fd) { return std::exchange(pipes_[static_cast<std::size_t>(fd)].parent, -1); }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) throw spawn_error(rc, std::string("posix_spawn ") + what + ": " + std::strerror(rc));
  }
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
  std::vector<pipe_pair> pipes_;
};

std::vector<std::string> environment_with(const std::vector<std::string>& set) {
  std::vector<std::string> env = set;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& s : set) replaced = replaced || s.rfind(name, 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  return env;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

child_process child_process::spawn(const std::vector<std::string>& argv, const spawn_options& options) {
  if (argv.empty()) throw spawn_error(EINVAL, "empty command");
  spawn_setup setup;
  setup.options(options);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  char** env = environ;
  if (!options.set_environment.empty()) {
    env_strings = environment_with(options.set_environment);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    env = envp.data();
  }

  child_process child;
  child.own_group_ = options.own_process_group;
  spawner::instance().run([&] {
    // Under the registry's lock, so that stop_all_children() never misses a child being born.
    std::lock_guard lock(children().mutex);
    if (children().stopped) throw spawn_error(ECANCELED, "not starting " + argv[0] + ": KernelBlaster is stopping");
    pid_t pid = -1;
    const bool search = argv[0].find('/') == std::string::npos;
    const int rc = search ? ::posix_spawnp(&pid, args[0], setup.actions(), setup.attr(), args.data(), env)
                          : ::posix_spawn(&pid, args[0], setup.actions(), setup.attr(), args.data(), env);
    if (rc != 0) throw spawn_error(rc, "cannot run " + argv[0] + ": " + std::strerror(rc));
    children().live.emplace(pid, options.own_process_group);
    child.pid_ = pid;
  });
  child.in_ = setup.take_parent(0);
  child.out_ = setup.take_parent(1);
  child.err_ = setup.take_parent(2);
  return child;
}

child_process::child_process(child_process&& other) noexcept { *this = std::move(other); }

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    own_group_ = other.own_group_;
    status_ = std::exchange(other.status_, std::nullopt);
    in_ = std::exchange(other.in_, -1);
    out_ = std::exchange(other.out_, -1);
    err_ = std::exchange(other.err_, -1);
  }
  return *this;
}

child_process::~child_process() { release(); }

void child_process::release() {
  if (pid_ > 0 && !status_) kill_and_wait();
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
  pid_ = -1;
}

void child_process::close_stdin() { close_fd(in_); }
void child_process::close_stdout() { close_fd(out_); }
void child_process::close_stderr() { close_fd(err_); }

void child_process::kill(int sig) const {
  if (!status_) send(pid_, own_group_, sig);
  else if (own_group_) send(pid_, true, sig);  // the leader is gone; what it started may not be
}

std::optional<int> child_process::try_wait() {
  if (!status_ && pid_ > 0) status_ = reap(pid_, false);
  return status_;
}

int child_process::wait() {
  if (!status_ && pid_ > 0) status_ = reap(pid_, true);
  return status_.value_or(-1);
}

int child_process::kill_and_wait() {
  kill(SIGKILL);
  close_fd(in_);
  close_fd(out_);
  close_fd(err_);
  return wait();
}

void stop_all_children() {
  std::lock_guard lock(children().mutex);
  children().stopped = true;
  for (const auto& [pid, own_group] : children().live) send(pid, own_group, SIGKILL);
}

std::string find_in_path(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  if (!path) return {};
  const std::string p(path);
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string dir = p.substr(start, end - start);
    if (!dir.empty() && executable(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return {};
}

std::string find_companion(const char* env_var, std::initializer_list<const char*> relative, const std::string& name) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = self.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      for (const auto* rel : relative) {
        const auto p = dir / rel;
        if (std::filesystem::exists(p, ec)) return p.string();
      }
    }
  }
  return find_in_path(name);
}

}  // namespace kblaster::support
