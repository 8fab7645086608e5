// kblaster.profile cancelled: the request's cancel reaches the analysis as a std::stop_token and
// kills the compiler in flight, rather than leaving it to run to the end. nvcc is a stand-in
// script first in PATH that writes its pid and sleeps.
#include "server_fixture.h"

#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace kblaster::testing;
namespace fs = std::filesystem;

namespace {

// A folder with a stand-in `nvcc` put first in PATH for the test's lifetime.
class slow_nvcc {
 public:
  slow_nvcc() : dir_(fs::temp_directory_path() / ("kblaster-slow-nvcc-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const fs::path nvcc = dir_ / "nvcc";
    // --version answers at once (the driver keys its cache by it); a build writes its pid and
    // becomes a long sleep, so the pid is the very process the driver started.
    std::ofstream(nvcc) << "#!/bin/sh\n"
                           "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 0.0, V0.0.0 (stand-in)'; exit 0; fi\n"
                           "echo $$ > '" << pid_file().string() << ".tmp'\n"
                           "mv '" << pid_file().string() << ".tmp' '" << pid_file().string() << "'\n"
                           "exec sleep 30\n";
    fs::permissions(nvcc, fs::perms::owner_all);
    const char* old = std::getenv("PATH");
    old_path_ = old ? old : "";
    ::setenv("PATH", (dir_.string() + ":" + old_path_).c_str(), 1);
  }
  ~slow_nvcc() {
    ::setenv("PATH", old_path_.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path pid_file() const { return dir_ / "nvcc.pid"; }
  fs::path source() const { return dir_ / "k.cu"; }

  /// The stand-in's pid once it has started (0 after `timeout`).
  pid_t wait_started(std::chrono::milliseconds timeout) const {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      pid_t pid = 0;
      if (std::ifstream in(pid_file()); in >> pid) return pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

 private:
  fs::path dir_;
  std::string old_path_;
};

void initialize_with(server_fixture& s, const json& options) {
  s.request(0, "initialize", {{"capabilities", json::object()}, {"initializationOptions", options}});
  s.reply(0);
  s.notify("initialized");
}

bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

bool gone_within(pid_t pid, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return gone(pid);
}

}  // namespace

TEST_CASE("$/cancelRequest of kblaster.profile kills its nvcc within a second") {
  slow_nvcc nvcc;
  server_fixture s;
  // Trusted, so that the command runs; the analysis on open is off, so that the only nvcc is
  // the profile's.
  json settings;
  settings["analysis"]["enabled"] = false;
  settings["arch"] = "sm_90";
  initialize_with(s, {{"workspaceTrusted", true}, {"kblaster", settings}});
  const std::string uri = "file://" + nvcc.source().string();
  s.open(uri, "__global__ void k(float* x) { x[0] = 1; }\n");
  json args = json::object();
  args["uri"] = uri;
  args["kernel"] = "k";
  s.request(1, "workspace/executeCommand", {{"command", "kblaster.profile"}, {"arguments", json::array({args})}});
  const pid_t pid = nvcc.wait_started(std::chrono::seconds(10));
  REQUIRE(pid > 0);
  CHECK_FALSE(gone(pid));
  s.notify("$/cancelRequest", {{"id", 1}});
  CHECK(gone_within(pid, std::chrono::seconds(1)));
  CHECK(error_code_of(s.reply(1)) == -32800);
  if (!gone(pid)) ::kill(pid, SIGKILL);  // never leave the stand-in behind a failed check
}

TEST_CASE("closing the document kills the nvcc of its analysis on save within a second") {
  slow_nvcc nvcc;
  server_fixture s;
  json settings;
  settings["analysis"]["enabled"] = true;
  settings["analysis"]["debounceMs"] = 0;
  settings["arch"] = "sm_90";
  initialize_with(s, {{"kblaster", settings}});
  const std::string uri = "file://" + nvcc.source().string();
  s.open(uri, "__global__ void k(float* x) { x[0] = 1; }\n");
  const pid_t pid = nvcc.wait_started(std::chrono::seconds(10));
  REQUIRE(pid > 0);
  CHECK_FALSE(gone(pid));
  s.notify("textDocument/didClose", {{"textDocument", {{"uri", uri}}}});
  CHECK(gone_within(pid, std::chrono::seconds(1)));
  if (!gone(pid)) ::kill(pid, SIGKILL);
}
