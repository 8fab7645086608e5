// Child-process management for kblaster-harness: pipes, a stderr drain thread, deadlines, and
// reading how the child died.
#include "engine/harness_client.h"

#include "engine/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

namespace kblaster::engine {

struct harness_client::child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::string out_buffer;
  std::mutex err_mutex;
  std::string err_tail;  // last few KB of stderr
  std::thread err_reader;

  ~child() { kill_and_reap(); }

  void kill_and_reap(int* status = nullptr) {
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      if (status) *status = st;
      pid = -1;
    }
    for (int* fd : {&in, &out}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
    if (err_reader.joinable()) err_reader.join();  // ends at EOF, once the child is gone
    if (err >= 0) ::close(err);
    err = -1;
  }

  std::string tail() {
    std::lock_guard lock(err_mutex);
    return err_tail;
  }

  // Reads one line from stdout before `deadline`; false on EOF or timeout (timed_out says which).
  bool read_line(std::string& line, std::chrono::steady_clock::time_point deadline, bool& timed_out,
                 std::stop_token stop = {}) {
    timed_out = false;
    char buf[65536];
    while (true) {
      if (const auto nl = out_buffer.find('\n'); nl != std::string::npos) {
        line = out_buffer.substr(0, nl);
        out_buffer.erase(0, nl + 1);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        return false;
      }
      if (stop.stop_requested()) return false;
      pollfd fd{out, POLLIN, 0};
      const long long wake_ms = stop.stop_possible() ? 100 : 1000;
      const int n = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), wake_ms)));
      if (n < 0 && errno != EINTR) return false;
      if (n <= 0) continue;
      const ssize_t got = ::read(out, buf, sizeof buf);
      if (got <= 0) return false;
      out_buffer.append(buf, static_cast<std::size_t>(got));
    }
  }
};

nlohmann::json harness_reply::to_json() const {
  if (ok()) return body;
  nlohmann::json j{{"verdict", "error"}, {"check", error}, {"reason", message}};
  if (!stderr_tail.empty()) j["stderr"] = stderr_tail;
  return j;
}

std::string find_harness() {
  if (const char* env = std::getenv("KBLASTER_HARNESS"); env && *env) return env;
  // In a build tree: <build>/cli/kblaster next to <build>/harness/kblaster-harness.
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = self.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      for (const auto* rel : {"harness/kblaster-harness", "kblaster-harness"}) {
        const auto p = dir / rel;
        if (std::filesystem::exists(p, ec)) return p.string();
      }
    }
  }
  return find_in_path("kblaster-harness");
}

harness_client::harness_client(harness_options options) : options_(std::move(options)) {
  // A write to a harness that just died must be an error, not a signal that ends the daemon.
  ::signal(SIGPIPE, SIG_IGN);
}

harness_client::~harness_client() { stop(); }

pid_t harness_client::pid() const { return child_ ? child_->pid : -1; }

void harness_client::stop() {
  if (!child_) return;
  if (child_->in >= 0) {
    const std::string bye = "{\"op\":\"shutdown\"}\n";
    (void)!::write(child_->in, bye.data(), bye.size());
  }
  child_.reset();  // SIGKILL and reap: the harness holds nothing worth a graceful exit
}

harness_reply harness_client::start() {
  child_.reset();
  const std::string exe = options_.executable.empty() ? find_harness() : options_.executable;
  if (exe.empty())
    return {{}, "start_failed", "kblaster-harness not found (build it with LibTorch installed, or set KBLASTER_HARNESS)", ""};
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC))
    return {{}, "start_failed", std::string("pipe: ") + std::strerror(errno), ""};
  const std::vector<std::string> argv{exe, "--device", options_.device};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment, built before fork (setenv is not async-signal-safe): ours, with
  // the options' entries replacing variables of the same name.
  std::vector<std::string> env_strings = options_.environment;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(options_.environment.begin(), options_.environment.end(),
                     [&](const std::string& o) { return o.rfind(name, 0) == 0; }))
      env_strings.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: a kill reaches anything the candidate started
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(args[0], args.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(in_pipe[1]); ::close(out_pipe[0]); ::close(err_pipe[0]);
    return {{}, "start_failed", std::string("fork: ") + std::strerror(errno), ""};
  }
  child_ = std::make_unique<child>();
  child_->pid = pid;
  child_->in = in_pipe[1];
  child_->out = out_pipe[0];
  child_->err = err_pipe[0];
  auto* c = child_.get();
  c->err_reader = std::thread([c] {
    char buf[4096];
    ssize_t got;
    while ((got = ::read(c->err, buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)) {
      if (got <= 0) continue;
      std::lock_guard lock(c->err_mutex);
      c->err_tail.append(buf, static_cast<std::size_t>(got));
      if (c->err_tail.size() > 8192) c->err_tail.erase(0, c->err_tail.size() - 8192);
    }
  });
  ++starts_;
  std::string line;
  bool timed_out = false;
  if (!child_->read_line(line, std::chrono::steady_clock::now() + options_.startup_timeout, timed_out))
    return lost("start-up", timed_out);
  try {
    const auto ready = nlohmann::json::parse(line);
    if (ready.value("event", "") != "ready") {
      auto r = harness_reply{{}, "start_failed", "the harness did not start: " + ready.value("reason", line), child_->tail()};
      child_.reset();
      return r;
    }
  } catch (const nlohmann::json::exception&) {
    auto r = harness_reply{{}, "protocol", "the harness said '" + line.substr(0, 200) + "' instead of ready", child_->tail()};
    child_.reset();
    return r;
  }
  return {};
}

harness_reply harness_client::lost(const std::string& during, bool timed_out) {
  harness_reply r;
  int status = 0;
  if (timed_out) {
    child_->kill_and_reap();
    r.error = "hang";
    r.message = "the harness did not answer within the watchdog during " + during +
                " (a kernel that never returns?); it was killed and will be restarted";
  } else {
    // EOF: the child is dying or dead; wait for it (briefly) to read why.
    pid_t done = 0;
    for (int i = 0; i < 300 && done == 0; ++i) {
      done = ::waitpid(child_->pid, &status, WNOHANG);
      if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == child_->pid) child_->pid = -1;  // reaped: status is how it ended
    else child_->kill_and_reap(&status);
    child_->kill_and_reap();
    const std::string tail = child_->tail();
    const bool oom_text = tail.find("out of memory") != std::string::npos || tail.find("bad_alloc") != std::string::npos;
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      r.error = oom_text || sig == SIGKILL ? "out_of_memory" : sig == SIGABRT ? "abort" : "crash";
      r.message = std::string("the harness died of signal ") + std::to_string(sig) + " (" + strsignal(sig) + ") during " +
                  during + (r.error == "out_of_memory" ? " (out of memory?)" : "") + "; it will be restarted";
    } else {
      r.error = oom_text ? "out_of_memory" : "exited";
      r.message = "the harness exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                  " during " + during + "; it will be restarted";
    }
  }
  r.stderr_tail = child_->tail();
  child_.reset();
  return r;
}

harness_reply harness_client::request(nlohmann::json req, std::stop_token stop) {
  if (!child_) {
    if (auto started = start(); !started.ok()) return started;
  }
  const auto id = next_id_++;
  req["id"] = id;
  const std::string op = req.value("op", "");
  // Timing may legitimately run for its cap twice (candidate and reference) plus warm-ups.
  double budget_s = 0;
  if (op == "time" || op == "evaluate") {
    double cap = 2.0;
    if (req.contains("timing") && req["timing"].is_object()) cap = req["timing"].value("max_seconds", cap);
    budget_s = 3 * cap;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.watchdog +
                        std::chrono::milliseconds(static_cast<long long>(budget_s * 1000));
  const std::string line = req.dump() + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::write(child_->in, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return lost("'" + op + "' (writing the request)", false);
    sent += static_cast<std::size_t>(n);
  }
  std::string reply_line;
  bool timed_out = false;
  while (child_->read_line(reply_line, deadline, timed_out, stop)) {
    nlohmann::json body;
    try {
      body = nlohmann::json::parse(reply_line);
    } catch (const nlohmann::json::exception&) {
      continue;  // not ours (should not happen: the harness moves fd 1 aside)
    }
    if (!body.is_object() || body.value("id", nlohmann::json()) != id) continue;
    harness_reply r{body, "", "", ""};
    if (body.value("check", "") == "cuda_fatal") {
      // The harness exits after a fatal CUDA error; reap it now so the next request starts afresh.
      r.stderr_tail = child_->tail();
      child_.reset();
    }
    return r;
  }
  if (stop.stop_requested()) {
    // The candidate may be deep in a kernel: killing the harness is the only prompt way out.
    child_.reset();
    return harness_reply{{}, "cancelled", "cancelled while the harness was running '" + op + "'", ""};
  }
  return lost("'" + op + "'", timed_out);
}

}  // namespace kblaster::engine
