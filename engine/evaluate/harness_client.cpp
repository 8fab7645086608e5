// Child-process management for kblaster-harness: pipes, a stderr drain thread, deadlines, and
// reading how the child died.
#include "engine/evaluate/harness_client.h"
#include "engine/task/timing_policy.h"

#include "support/files.h"
#include "support/hash.h"
#include "support/run_process.h"
#include "support/sandbox.h"
#include "support/untrusted_text.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

namespace kblaster::engine {

bool harness_trace_requested() { return std::getenv("KBLASTER_HARNESS_TRACE") != nullptr; }

struct harness_client::child {
  support::child_process process;
  std::string out_buffer;
  std::mutex err_mutex;
  std::string err_tail;  // last few KB of stderr
  std::thread err_reader;
  std::optional<support::sandbox_scratch> scratch;  // removed once the harness is gone
  // The libraries it was sent, copied where it reads them (read-only to it): it sees these, not
  // the build cache with every kernel the user ever compiled.
  std::optional<support::sandbox_scratch> libraries;

  explicit child(support::child_process p) : process(std::move(p)) {}
  ~child() { kill_and_reap(); }

  pid_t pid() const { return process.pid(); }

  // SIGKILL to the group (what the candidate started may outlive the harness), reaped; the raw
  // wait status, the child's own when it had already ended.
  int kill_and_reap() {
    const int status = process.kill_and_wait();
    if (err_reader.joinable()) err_reader.join();  // ends at EOF, once the child is gone
    process.close_stderr();
    return status;
  }

  // The harness's stderr is also its runners': the candidate's own output and crash text, bounded
  // and marked before it reaches a message.
  std::string tail() {
    std::lock_guard lock(err_mutex);
    return support::candidate_text(err_tail, "output beside the harness's", support::candidate_text_limit,
                                   support::keep_end::tail);
  }

  // Reads one line from stdout before `deadline`; false on EOF or timeout (timed_out says which).
  bool read_line(std::string& line, std::chrono::steady_clock::time_point deadline, bool& timed_out,
                 std::stop_token stop) {
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
      pollfd fd{process.stdout_fd(), POLLIN, 0};
      const long long wake_ms = stop.stop_possible() ? 100 : 1000;
      const int n = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), wake_ms)));
      if (n < 0 && errno != EINTR) return false;
      if (n <= 0) continue;
      const ssize_t got = ::read(process.stdout_fd(), buf, sizeof buf);
      if (got <= 0) return false;
      out_buffer.append(buf, static_cast<std::size_t>(got));
    }
  }
};

bool harness_reply::judge_failed() const {
  if (ok()) return body.is_object() && body.value("judge_error", false);
  return error == "start_failed" || error == "protocol" || error == "crash" || error == "abort" || error == "killed" ||
         error == "out_of_memory" || error == "exited";
}

nlohmann::json harness_reply::to_json() const {
  if (ok()) return body;
  nlohmann::json j{{"verdict", "error"}, {"check", error}, {"reason", message}};
  if (!stderr_tail.empty()) j["stderr"] = stderr_tail;
  return j;
}

std::string find_harness() {
  // In a build tree: <build>/cli/kblaster next to <build>/harness/kblaster-harness.
  return support::find_companion("KBLASTER_HARNESS", {"harness/kblaster-harness", "kblaster-harness"}, "kblaster-harness");
}

harness_client::harness_client(harness_options options) : options_(std::move(options)) {
  // A write to a harness that just died must be an error, not a signal that ends the daemon.
  ::signal(SIGPIPE, SIG_IGN);
}

harness_client::~harness_client() { stop(); }

pid_t harness_client::pid() const { return child_ ? child_->pid() : -1; }

std::filesystem::path harness_client::scratch() const {
  return child_ && child_->scratch ? child_->scratch->path() : std::filesystem::path();
}

void harness_client::stop() {
  if (!child_) return;
  if (const int in = child_->process.stdin_fd(); in >= 0) {
    const std::string bye = "{\"op\":\"shutdown\"}\n";
    (void)!::write(in, bye.data(), bye.size());
  }
  child_.reset();  // SIGKILL and reap: the harness holds nothing worth a graceful exit
}

harness_reply harness_client::start(std::stop_token stop) {
  child_.reset();
  // A stopped run starts nothing: LibTorch's load would hold the stop for most of a second.
  if (stop.stop_requested()) return harness_reply{{}, "cancelled", "cancelled before the harness started", ""};
  const std::string exe = options_.executable.empty() ? find_harness() : options_.executable;
  if (exe.empty())
    return {{}, "start_failed", "kblaster-harness not found (build it with LibTorch installed, or set KBLASTER_HARNESS)", ""};
  // Its own process group: a kill reaches anything the candidate started. Inside the sandbox
  // the harness (and the candidate it loads) writes only to its scratch folder, sees no network,
  // no secret and no other process; the options' environment entries join the allow-listed one.
  support::spawn_options spawn;
  spawn.in = support::stream::pipe;
  std::optional<support::sandbox_scratch> scratch, libraries;
  try {
    scratch.emplace(support::user_scratch_root() / "jobs", "harness");
    libraries.emplace(support::user_scratch_root() / "jobs", "harness-libraries");
    support::sandbox_policy policy;
    policy.scratch = scratch->path();
    policy.environment = options_.environment;
    policy.gpu = options_.device != "cpu";
    // It reads its own folder (the runner beside it) and LibTorch's, the tasks and ncu its
    // caller names, what earlier requests named, and the libraries it is sent.
    policy.readable = support::program_folders(exe);
    for (const auto& list : {options_.readable, shown_}) policy.readable.insert(policy.readable.end(), list.begin(), list.end());
    policy.readable.push_back(libraries->path());
    const auto argv = support::sandboxed_command({exe, "--device", options_.device}, policy);
    child_ = std::make_unique<child>(support::child_process::spawn(argv, spawn));
    child_->scratch = std::move(scratch);
    child_->libraries = std::move(libraries);
  } catch (const support::spawn_error& e) {
    return {{}, "start_failed", e.what(), ""};
  } catch (const std::exception& e) {  // no scratch folder, or the sandbox required and missing
    return {{}, "start_failed", std::string("cannot sandbox the harness: ") + e.what(), ""};
  }
  auto* c = child_.get();
  // With KBLASTER_HARNESS_TRACE set, the harness's phase timings go on to our own stderr as they
  // come (the user asked to watch them), not only into the tail a failure reports.
  const bool pass_through = harness_trace_requested();
  c->err_reader = std::thread([c, pass_through] {
    const int err = c->process.stderr_fd();
    char buf[4096];
    ssize_t got;
    while ((got = ::read(err, buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)) {
      if (got <= 0) continue;
      if (pass_through) (void)!::write(STDERR_FILENO, buf, static_cast<std::size_t>(got));
      std::lock_guard lock(c->err_mutex);
      c->err_tail.append(buf, static_cast<std::size_t>(got));
      if (c->err_tail.size() > 8192) c->err_tail.erase(0, c->err_tail.size() - 8192);
    }
  });
  ++starts_;
  std::string line;
  bool timed_out = false;
  if (!child_->read_line(line, std::chrono::steady_clock::now() + options_.startup_timeout, timed_out, stop)) {
    if (stop.stop_requested()) {
      child_.reset();  // kills its process group, and whatever it had started
      return harness_reply{{}, "cancelled", "cancelled while the harness was starting", ""};
    }
    return lost("start-up", timed_out);
  }
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
    std::optional<int> ended;
    for (int i = 0; i < 300 && !ended; ++i) {
      ended = child_->process.try_wait();
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    status = child_->kill_and_reap();
    const std::string tail = child_->tail();
    const bool oom_text = tail.find("out of memory") != std::string::npos || tail.find("bad_alloc") != std::string::npos;
    if (const int sig = support::job_signal(status); sig != 0) {
      // A SIGKILL is not the candidate's (it runs in a runner of its own, which cannot signal the
      // judge): the OOM killer, or a kill from outside (a sandbox that died with the thread that
      // started it, before issue 35). Out of memory only when the harness's last words say so.
      r.error = oom_text ? "out_of_memory" : sig == SIGKILL ? "killed" : sig == SIGABRT ? "abort" : "crash";
      r.message = std::string("the harness died of signal ") + std::to_string(sig) + " (" + strsignal(sig) + ") during " +
                  during + (r.error == "out_of_memory" ? " (out of memory)" : "") + "; it will be restarted";
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

namespace {

namespace fs = std::filesystem;

bool add_unique(std::vector<fs::path>& list, const fs::path& p) {
  if (std::find(list.begin(), list.end(), p) != list.end()) return false;
  list.push_back(p);
  return true;
}

// The folders of the files a task names (its TorchScript module, saved inputs): the harness reads
// those, and nothing else of the user's.
void task_folders(const nlohmann::json& j, std::vector<fs::path>& out) {
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) task_folders(v, out);
    return;
  }
  if (!j.is_string()) return;
  const auto& s = j.get_ref<const std::string&>();
  std::error_code ec;
  if (!s.empty() && s.front() == '/' && fs::is_regular_file(s, ec)) add_unique(out, fs::path(s).parent_path());
}

// The folders of the ncu an argv runs (support::ncu_folders: its installation, and the
// standalone Nsight Compute a toolkit's ncu script may run).
std::vector<fs::path> ncu_installation(const nlohmann::json& argv) {
  if (!argv.is_array() || argv.empty() || !argv[0].is_string()) return {};
  return support::ncu_folders(argv[0].get<std::string>());
}

}  // namespace

void harness_client::show_folders_read_by(const nlohmann::json& req) {
  std::vector<fs::path> needed;
  if (req.contains("task")) task_folders(req["task"], needed);
  for (const char* key : {"ncu", "next_ncu"})
    if (req.contains(key))
      for (const auto& dir : ncu_installation(req[key])) add_unique(needed, dir);
  bool added = false;
  for (const auto& dir : needed)
    if (std::find(options_.readable.begin(), options_.readable.end(), dir) == options_.readable.end())
      added = add_unique(shown_, dir) || added;
  if (added) stop();  // a harness cannot be shown a folder once started: the next one is
}

bool harness_client::stage_libraries(nlohmann::json& req, std::string& problem) {
  for (const char* key : {"candidate", "reference_library"}) {
    if (!req.contains(key) || !req[key].is_string()) continue;
    const fs::path from = req[key].get<std::string>();
    std::error_code ec;
    const auto size = fs::file_size(from, ec);
    const auto when = fs::last_write_time(from, ec).time_since_epoch().count();
    if (ec) continue;  // the harness says what is wrong with a library it cannot open
    // Named by where it came from and its version, never rewritten: a loaded library stays whole.
    const auto name = support::fnv1a_hex(from.string() + '\0' + std::to_string(size) + '\0' + std::to_string(when)) + "-" +
                      from.filename().string();
    const auto to = child_->libraries->path() / name;
    if (!fs::exists(to, ec)) {
      const auto tmp = support::temporary_sibling(to);
      fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
      if (!ec) fs::rename(tmp, to, ec);
      if (ec) {
        problem = "cannot copy " + from.string() + " where the harness reads it: " + ec.message();
        return false;
      }
    }
    req[key] = to.string();
  }
  return true;
}

harness_reply harness_client::request(nlohmann::json req, std::stop_token stop) {
  show_folders_read_by(req);
  if (!child_) {
    if (auto started = start(stop); !started.ok()) return started;
  }
  if (std::string problem; !stage_libraries(req, problem)) return {{}, "start_failed", problem, ""};
  const auto id = next_id_++;
  req["id"] = id;
  const std::string op = req.value("op", "");
  // Timing may legitimately run for its cap twice (candidate and reference) plus warm-ups.
  double budget_s = 0;
  if (op == "time" || op == "evaluate") {
    double cap = timing_policy{}.max_seconds;
    if (req.contains("timing") && req["timing"].is_object()) cap = req["timing"].value("max_seconds", cap);
    budget_s = timing_budget_seconds(cap);
  }
  // A profile waits for ncu as long as the engine allows it (its own deadline_ms).
  if (op == "profile") budget_s = req.value("deadline_ms", 0.0) / 1000;
  const auto allowed = options_.watchdog + std::chrono::milliseconds(static_cast<long long>(budget_s * 1000));
  const auto deadline = std::chrono::steady_clock::now() + allowed;
  // The harness ends a candidate that overruns a little before the watchdog would end the harness:
  // a hang then costs the candidate's runner, not the harness and its loaded references.
  if (!req.contains("deadline_ms")) req["deadline_ms"] = static_cast<double>(allowed.count()) * 0.8;
  const std::string line = req.dump() + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::write(child_->process.stdin_fd(), line.data() + sent, line.size() - sent);
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
    if (body.value("harness_exits", false)) {
      // The harness exits after a fatal CUDA error in its own context (a candidate's ends only
      // its runner); reap it now so the next request starts afresh.
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
