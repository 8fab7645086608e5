// service.cancel: "Optimize" cancelled (the editor's $/cancelRequest and the CLI's Ctrl-C both
// become the std::stop_token handed to optimize_file) while each kind of child runs: the user's
// build, the user's program under capture, and the harness measuring the input. After the stop,
// no process descended from this one may be left after a second: the check reads /proc, so a
// child the service forgot (or a grandchild a killed child left behind) fails it.
#include "engine/optimize/service.h"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
using namespace std::chrono_literals;

namespace {

// Every live process whose chain of parents reaches `root` (zombies are not counted: they hold
// no resources and are reaped by whoever waits for them).
std::vector<pid_t> descendants_of(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    pid_t ppid = 0;
    std::istringstream rest(line.substr(close + 1));
    rest >> state >> ppid;
    if (state != 'Z') children.emplace(ppid, std::stoi(name));
  }
  std::vector<pid_t> out, todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (auto [it, end] = children.equal_range(p); it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

std::string command_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& c : text)
    if (c == '\0') c = ' ';
  return text;
}

bool no_descendants_within(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  do {
    if (descendants_of(::getpid()).empty()) return true;
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < until);
  // What outlived the second, for the failure's message.
  for (const pid_t p : descendants_of(::getpid())) MESSAGE("left: " << p << " " << command_of(p));
  return false;
}

// A descendant has appeared (and `marker` exists); with `named`, one whose command line holds it.
bool wait_for_descendant(std::chrono::milliseconds limit, const fs::path& marker = {}, const std::string& named = {}) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    for (const pid_t p : descendants_of(::getpid()))
      if ((marker.empty() || fs::exists(marker)) && (named.empty() || command_of(p).find(named) != std::string::npos))
        return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

struct scratch {
  fs::path dir = fs::temp_directory_path() / ("kblaster-service-cancel-" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~scratch() {
    for (pid_t p : descendants_of(::getpid())) ::kill(p, SIGKILL);  // never leave a stand-in behind a failed check
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // A shell script that marks it started, then sleeps in a child of its own (a grandchild of the
  // service, which must go too).
  fs::path sleeper(const std::string& name) const {
    const fs::path p = dir / name;
    std::ofstream(p) << "#!/bin/sh\ntouch '" << (dir / (name + ".started")).string() << "'\nsleep 60\n";
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
};

// A kernel file of the user's own build (no main; the program is the build's): the service
// reads it as a program because run.command names one.
optimize_request program_request(const scratch& s) {
  optimize_request q;
  q.file = (s.dir / "saxpy_kernels.cu").string();
  std::ofstream(q.file) << "__global__ void saxpy(float a, const float* x, float* y, int n) {\n"
                           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] += a * x[i];\n}\n";
  q.kernel = "saxpy";
  q.program.run.command = {(s.dir / "app").string()};
  q.program.cache_root = (s.dir / "cache").string();
  q.program.agent = q.file;            // any existing file: the check for the agent passes, nothing loads it
  q.program.driver_library = "libc.so.6";  // stands in for the driver this machine lacks
  q.program.timeout = 60s;
  q.model.disabled = true;
  q.kb_path = s.dir / "kb.sqlite";
  q.runs_base = s.dir / "runs";
  return q;
}

// Runs the service on a thread, stops it once `started` holds, and checks that every child is
// gone within a second of the stop.
void cancel_when(const optimize_request& request, const std::function<bool()>& started) {
  std::stop_source stop;
  std::optional<optimize_refusal_kind> refused;
  std::optional<stop_reason> finished;
  std::thread run([&] {
    try {
      finished = optimize_file(request, {}, stop.get_token()).result.stop_reason;
    } catch (const optimize_refusal& e) {
      refused = e.kind();
    }
  });
  const bool began = started();
  CHECK(began);
  stop.request_stop();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(no_descendants_within(1000ms));
  run.join();
  MESSAGE("returned " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s after the stop");
  // Stopped, not failed: a refusal may only say the capture was stopped; a run, that it was cancelled.
  CHECK((refused.has_value() || finished.has_value()));
  if (refused) CHECK(*refused == optimize_refusal_kind::capture_failed);
  if (finished) CHECK(*finished == stop_kind::cancelled);
}

}  // namespace

TEST_CASE("a stop during the user's build kills the build and what it started") {
  scratch s;
  auto q = program_request(s);
  q.program.run.build = {s.sleeper("slow-build").string()};
  cancel_when(q, [&] { return wait_for_descendant(20s, s.dir / "slow-build.started"); });
}

TEST_CASE("a stop during the capture's run of the program kills the program") {
  scratch s;
  auto q = program_request(s);
  s.sleeper("app");
  cancel_when(q, [&] { return wait_for_descendant(20s, s.dir / "app.started"); });
}

namespace {

// vector_add on the CPU path with Debian's LibTorch: the service's run of the input, stopped when
// `started` holds.
void cancel_harness_when(const std::function<bool()>& started) {
  const char* harness = std::getenv("KBLASTER_HARNESS");
  if (!harness || !*harness) {
    MESSAGE("skipped: kblaster-harness is not built (LibTorch not found)");
    return;
  }
  scratch s;
  fs::copy(fs::path(KBLASTER_SOURCE_DIR) / "examples/tasks/vector_add", s.dir / "vector_add", fs::copy_options::recursive);
  optimize_request q;
  q.file = (s.dir / "vector_add").string();
  q.start_from = (s.dir / "vector_add" / "kernel_cpu.cpp").string();  // the host-code kernel the CPU path runs
  q.evaluator.device = "cpu";
  q.evaluator.harness = harness;
  q.model.disabled = true;
  q.loop.breadth = q.loop.depth = q.loop.iterations = 1;
  q.kb_path = s.dir / "kb.sqlite";
  q.out_dir = s.dir / "run";
  cancel_when(q, started);
}

}  // namespace

TEST_CASE("a stop before the harness is up (the sandbox's first probe) starts no harness, or ends it at once") {
  // The first child of a task's run is the sandbox's probe, before the harness: a stop then must
  // not wait for LibTorch's load (0.6-0.8 s here, and more under load) before it is heard.
  cancel_harness_when([] { return wait_for_descendant(60s); });
}

TEST_CASE("a stop while the harness measures the input kills the harness and its runner") {
  // The runner is up: the input is being verified and timed.
  cancel_harness_when([] { return wait_for_descendant(60s, {}, "kblaster-runner"); });
}
