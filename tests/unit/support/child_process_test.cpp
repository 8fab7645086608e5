// support::child_process: what a child gets from the daemon (stdin, signals, process group,
// environment) and that killing it reaches what it started.
#include "support/child_process.h"

#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using kblaster::support::child_process;
using kblaster::support::spawn_error;
using kblaster::support::spawn_options;
using kblaster::support::stream;

namespace {

// Everything the child writes to `fd` until EOF, or what came within `limit`.
std::string drain(int fd, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("a child's stdin is /dev/null unless a pipe is asked for, never the daemon's") {
  // Under `kblaster serve` our stdin is the LSP pipe: a child reading it would steal messages.
  auto cat = child_process::spawn({"cat"});
  CHECK(cat.stdin_fd() == -1);
  CHECK(drain(cat.stdout_fd()).empty());  // EOF at once: it read /dev/null
  const int status = cat.wait();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  spawn_options piped;
  piped.in = stream::pipe;
  auto echo = child_process::spawn({"cat"}, piped);
  REQUIRE(echo.stdin_fd() >= 0);
  CHECK(::write(echo.stdin_fd(), "hello\n", 6) == 6);
  echo.close_stdin();
  CHECK(drain(echo.stdout_fd()) == "hello\n");
  CHECK(WEXITSTATUS(echo.wait()) == 0);
}

TEST_CASE("stdout and stderr come back apart; exit status and cwd are the child's") {
  spawn_options o;
  o.cwd = "/";
  auto c = child_process::spawn({"sh", "-c", "pwd; echo oops >&2; exit 7"}, o);
  CHECK(drain(c.stdout_fd()) == "/\n");
  CHECK(drain(c.stderr_fd()) == "oops\n");
  const int status = c.wait();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("a child leads its own process group, and a kill reaches what it started") {
  auto c = child_process::spawn({"sh", "-c", "sleep 60 & echo $!; wait"});
  const std::string line = drain(c.stdout_fd(), std::chrono::milliseconds(2000));
  REQUIRE(!line.empty());
  const pid_t grandchild = std::stoi(line);
  CHECK(::getpgid(c.pid()) == c.pid());
  CHECK(::getpgid(grandchild) == c.pid());
  const int status = c.kill_and_wait();
  CHECK(WIFSIGNALED(status));
  // The grandchild is not ours to reap; it is gone (or a zombie of init's) once the group died.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !alive(grandchild) || ::getpgid(grandchild) != c.pid();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  char state = '?';
  if (FILE* f = std::fopen(("/proc/" + std::to_string(grandchild) + "/stat").c_str(), "r")) {
    int pid = 0;
    char comm[64];
    if (std::fscanf(f, "%d %63s %c", &pid, comm, &state) != 3) state = '?';
    std::fclose(f);
  }
  CHECK((!alive(grandchild) || state == 'Z'));
}

TEST_CASE("destroying a running child kills and reaps it") {
  pid_t pid = -1;
  {
    auto c = child_process::spawn({"sleep", "60"});
    pid = c.pid();
    CHECK(alive(pid));
  }
  CHECK_FALSE(alive(pid));  // reaped, not a zombie: kill(pid, 0) fails
}

TEST_CASE("signals the daemon ignores are default again in the child") {
  // kblaster serve ignores SIGPIPE; nvcc and the harness must not inherit that.
  const auto old = std::signal(SIGPIPE, SIG_IGN);
  auto c = child_process::spawn({"sh", "-c", "grep SigIgn /proc/self/status"});
  const std::string out = drain(c.stdout_fd());
  c.wait();
  std::signal(SIGPIPE, old);
  REQUIRE(out.find("SigIgn:") != std::string::npos);
  const unsigned long long ignored = std::stoull(out.substr(out.find(':') + 1), nullptr, 16);
  CHECK((ignored & (1ull << (SIGPIPE - 1))) == 0);
}

TEST_CASE("the environment is ours with the asked entries replaced or added") {
  ::setenv("KBLASTER_CHILD_TEST_KEEP", "kept", 1);
  ::setenv("KBLASTER_CHILD_TEST_SET", "old", 1);
  spawn_options o;
  o.set_environment = {"KBLASTER_CHILD_TEST_SET=new", "KBLASTER_CHILD_TEST_ADD=added"};
  auto c = child_process::spawn(
      {"sh", "-c", "echo $KBLASTER_CHILD_TEST_KEEP $KBLASTER_CHILD_TEST_SET $KBLASTER_CHILD_TEST_ADD"}, o);
  CHECK(drain(c.stdout_fd()) == "kept new added\n");
  c.wait();
}

TEST_CASE("a program that cannot start is a spawn_error naming it and errno") {
  try {
    (void)child_process::spawn({"/nonexistent/kblaster-test-program"});
    FAIL("spawned the impossible");
  } catch (const spawn_error& e) {
    CHECK(e.code() == ENOENT);
    CHECK(std::string(e.what()).find("/nonexistent/kblaster-test-program") != std::string::npos);
  }
  CHECK_THROWS_AS(child_process::spawn({}), spawn_error);
  CHECK(kblaster::support::find_in_path("sh").find("/sh") != std::string::npos);
  CHECK(kblaster::support::find_in_path("kblaster-no-such-program").empty());
}

TEST_CASE("a child outlives the thread that started it: a parent-death signal waits for the process") {
  // bwrap --die-with-parent sets PR_SET_PDEATHSIG, which the kernel fires when the *thread* that
  // started the child ends. setpriv sets the same on itself; its sleep must survive the thread.
  if (kblaster::support::find_in_path("setpriv").empty()) {
    MESSAGE("SKIPPED: setpriv not found");
    return;
  }
  std::optional<child_process> c;
  std::thread([&] {
    c.emplace(child_process::spawn({"setpriv", "--pdeathsig", "KILL", "sleep", "30"}));
    // Long enough for setpriv to have set its parent-death signal before this thread ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }).join();
  REQUIRE(c);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(c->try_wait());  // still running: not killed when the thread ended
  const int status = c->kill_and_wait();
  CHECK(WIFSIGNALED(status));
}

namespace {

// Whether `pid` still runs: not gone and not a zombie (a zombie holds nothing; its parent reaps it).
bool running(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buffer[512] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  const std::string stat(buffer, n);
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// One line the child writes to `fd` (without its newline), or what came within 20 s.
std::string first_line(int fd) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char c = 0;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    if (::read(fd, &c, 1) != 1 || c == '\n') break;
    out += c;
  }
  return out;
}

const char* const stop_child_env = "KBLASTER_TEST_STOP_ALL_CHILDREN";

}  // namespace

// stop_all_children() cannot be undone, so the test runs again in a process of its own: this
// executable, asked for this test case alone, with the variable that says it is the one to stop.
TEST_CASE("stop_all_children: every child and what it started is killed, and no spawn racing it survives") {
  if (!std::getenv(stop_child_env)) {
    spawn_options o;
    o.set_environment = {std::string(stop_child_env) + "=1"};
    o.out = o.err = stream::inherit;
    auto self = child_process::spawn(
        {"/proc/self/exe", "--test-case=stop_all_children: every child and what it started is killed*"}, o);
    const int status = self.wait();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    return;
  }
  // A child that started one of its own (in its process group), and says which.
  auto parent = child_process::spawn({"sh", "-c", "sleep 30 & echo $!; wait"});
  const auto grandchild = static_cast<pid_t>(std::stoi(first_line(parent.stdout_fd())));
  REQUIRE(running(grandchild));

  // Threads that start children as fast as they can while the stop comes: whichever started is
  // kept, so that only the stop can end it.
  std::mutex mutex;
  std::vector<child_process> started;
  std::atomic<int> refused{0};
  std::vector<std::thread> spawners;
  for (int t = 0; t < 4; ++t)
    spawners.emplace_back([&] {
      while (true) {
        try {
          auto c = child_process::spawn({"sleep", "30"});
          const std::lock_guard lock(mutex);
          started.push_back(std::move(c));
        } catch (const spawn_error& e) {
          if (e.code() == ECANCELED) ++refused;
          return;
        }
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kblaster::support::stop_all_children();
  for (auto& t : spawners) t.join();
  CHECK(refused == 4);
  CHECK_FALSE(started.empty());

  // SIGKILL is delivered at once, but a process takes a moment to end.
  auto any_running = [&] {
    if (running(parent.pid()) || running(grandchild)) return true;
    for (const auto& c : started)
      if (running(c.pid())) return true;
    return false;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (any_running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(running(parent.pid()));
  CHECK_FALSE(running(grandchild));
  int left = 0;
  for (const auto& c : started) left += running(c.pid()) ? 1 : 0;
  CHECK_MESSAGE(left == 0, left << " of " << started.size() << " children still run after the stop");

  try {
    child_process::spawn({"true"});
    FAIL("a spawn after the stop started");
  } catch (const spawn_error& e) {
    CHECK(e.code() == ECANCELED);
  }
}
