// The sandbox from outside: a shell run under sandboxed_command() may write its scratch folder
// and nothing else, sees none of the daemon's secrets, reaches no network, is the only process
// it can see beside its init, and a grandchild it leaves behind dies with it. Runs wherever
// bubblewrap can (CI installs it); elsewhere it checks that the fallback still clears the
// environment and says UNSANDBOXED.
#include "support/run_process.h"
#include "support/sandbox.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {
namespace fs = std::filesystem;
using namespace kblaster::support;

process_result run_in(const sandbox_scratch& scratch, const std::string& script) {
  sandbox_policy p;
  p.scratch = scratch.path();
  p.gpu = false;
  return run_process(sandboxed_command({"/bin/sh", "-c", script}, p), std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("sandbox: the environment is an allow-list; keys never pass") {
  ::setenv("OPENAI_API_KEY", "sk-sandbox-test", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  ::setenv("CUDA_FAKE_TOKEN", "t", 1);  // CUDA_* passes, but never a name that looks secret
  sandbox_scratch scratch(fs::temp_directory_path() / "kblaster-sandbox-test", "env");
  const auto r = run_in(scratch, "env");
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("CUDA_FAKE_TOKEN");
  REQUIRE(r.ok());
  CHECK(r.out.find("sk-sandbox-test") == std::string::npos);
  CHECK(r.out.find("CUDA_FAKE_TOKEN") == std::string::npos);
  CHECK(r.out.find("CUDA_VISIBLE_DEVICES=3") != std::string::npos);
  CHECK(r.out.find("HOME=" + scratch.path().string()) != std::string::npos);
}

TEST_CASE("sandbox: writes only to its scratch; no network; no other process; nothing outlives it") {
  const auto& sb = sandbox_support();
  if (!sb.active()) {
    MESSAGE("bubblewrap unavailable here: " << sb.summary);
    CHECK(sb.summary.rfind("UNSANDBOXED", 0) == 0);
    return;
  }
  sandbox_scratch scratch(fs::temp_directory_path() / "kblaster-sandbox-test", "fs");
  const fs::path outside = fs::temp_directory_path() / ("kblaster-sandbox-outside-" + std::to_string(::getpid()));
  SUBCASE("files") {
    // /tmp is the job's own: a write there lands in its private /tmp, never in the real one.
    const auto r = run_in(scratch, "echo x > \"$HOME/inside\" && echo ok-inside; echo x > " + outside.string() +
                                       " 2>/dev/null; echo x > /etc/kblaster-sandbox 2>/dev/null && echo ESCAPED; true");
    CHECK(r.out.find("ok-inside") != std::string::npos);
    CHECK(r.out.find("ESCAPED") == std::string::npos);
    CHECK(fs::exists(scratch.path() / "inside"));
    CHECK_FALSE(fs::exists(outside));
  }
  SUBCASE("network: a listener on loopback is out of reach") {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(s, 1) == 0);
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    const auto port = std::to_string(ntohs(a.sin_port));
    // bash's /dev/tcp when there is bash; the check is the same either way.
    const auto r = run_in(scratch, "if command -v bash >/dev/null; then bash -c 'echo hi > /dev/tcp/127.0.0.1/" + port +
                                       "' 2>/dev/null && echo ESCAPED; fi; true");
    ::close(s);
    CHECK(r.out.find("ESCAPED") == std::string::npos);
  }
  SUBCASE("processes: its own PID namespace") {
    const auto r = run_in(scratch, "echo pid=$$; ls /proc | grep -c '^[0-9]'");
    CHECK(r.out.find("pid=2") != std::string::npos);  // bwrap's init is 1
    CHECK(std::atoi(r.out.substr(r.out.find('\n') + 1).c_str()) <= 4);
  }
  SUBCASE("a setsid grandchild dies with the job") {
    const auto r = run_in(scratch, "setsid sh -c 'exec -a kblaster-sandbox-escapee sleep 300' & sleep 0.2; echo started");
    CHECK(r.out.find("started") != std::string::npos);
    ::usleep(300 * 1000);
    const auto ps = run_process({"pgrep", "-f", "kblaster-sandbox-escapee"}, std::chrono::seconds(10));
    CHECK(ps.out.empty());
  }
  SUBCASE("a job killed by a signal reads as that signal") {
    sandbox_policy p;
    p.scratch = scratch.path();
    p.gpu = false;
    auto child = child_process::spawn(sandboxed_command({"/bin/sh", "-c", "kill -SEGV $$"}, p));
    CHECK(job_signal(child.wait()) == SIGSEGV);
  }
}
