// Deny by default (issue 50): a sandboxed job sees the toolchain, its own task files (read-only)
// and its scratch folder (writable), and nothing else of the user's. Secrets are planted in /tmp
// outside the scratch, in a home folder made for the test (set as $HOME), and in the real home
// folder when it is writable; the job must not read them by path, nor find them by listing. The
// sandbox once bound `/` read-only: this test fails against that (a planted file is read back).
#include "support/run_process.h"
#include "support/sandbox.h"
#include "support/untrusted_text.h"

#include <doctest/doctest.h>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace {
namespace fs = std::filesystem;
using namespace kblaster::support;

// A file with `text`, removed (with the folders made for it) when the object goes.
class planted_file {
 public:
  planted_file(const fs::path& path, const std::string& text, const fs::path& remove_root = {})
      : path_(path), remove_root_(remove_root.empty() ? path : remove_root) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  ~planted_file() {
    std::error_code ec;
    fs::remove_all(remove_root_, ec);
  }
  planted_file(const planted_file&) = delete;
  planted_file& operator=(const planted_file&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_, remove_root_;
};

// $HOME set to `home` for the object's life (the real one restored afterwards).
class scoped_home {
 public:
  explicit scoped_home(const fs::path& home) {
    if (const char* h = std::getenv("HOME")) saved_ = h;
    ::setenv("HOME", home.c_str(), 1);
  }
  ~scoped_home() {
    if (saved_) ::setenv("HOME", saved_->c_str(), 1);
    else ::unsetenv("HOME");
  }
  scoped_home(const scoped_home&) = delete;
  scoped_home& operator=(const scoped_home&) = delete;

 private:
  std::optional<std::string> saved_;
};

std::string unique(const std::string& what) { return "kblaster-deny-" + what + "-" + std::to_string(::getpid()); }

// The real home folder (the password database's), when this user may write there.
std::optional<fs::path> writable_real_home() {
  const passwd* pw = ::getpwuid(::getuid());
  if (!pw || !pw->pw_dir || ::access(pw->pw_dir, W_OK) != 0) return std::nullopt;
  return fs::path(pw->pw_dir);
}

process_result run_job(const sandbox_policy& policy, const std::string& script) {
  return run_process(sandboxed_command({"/bin/sh", "-c", script}, policy), std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("sandbox: deny by default: planted files in /tmp and the home folders are not there; the toolchain, "
          "the task and the scratch are") {
  const auto& sb = sandbox_support();
  if (!sb.active()) {
    MESSAGE("bubblewrap unavailable here: " << sb.summary);
    CHECK(sb.summary.rfind("UNSANDBOXED", 0) == 0);
    // A bwrap that starts no sandbox for want of namespaces is the machine's; one that refuses
    // the view (a mount it cannot make) is ours.
    const bool view_refused = sb.problem.find("bwrap: Can't") != std::string::npos;
    CHECK_FALSE(view_refused);
    return;
  }
  const std::string secret = "sk-kblaster-planted-" + std::to_string(::getpid());
  const fs::path tmp = fs::temp_directory_path();
  planted_file in_tmp(tmp / unique("tmp") / "secret.txt", secret, tmp / unique("tmp"));
  // Outside /tmp (the build tree, under /work here): a private /tmp alone would not hide it.
  const fs::path fake_home = fs::current_path() / unique("home");
  planted_file in_fake_home(fake_home / "notes.txt", secret, fake_home);
  planted_file fake_ssh_key(fake_home / ".ssh/id_ed25519", secret, fake_home / ".ssh");
  std::optional<planted_file> in_real_home;
  if (const auto home = writable_real_home()) in_real_home.emplace(*home / (unique("real-home") + ".txt"), secret);
  const fs::path task_dir = tmp / ("kblaster-sandbox-task-" + std::to_string(::getpid()));
  planted_file task(task_dir / "task.json", "{\"name\": \"the-task\"}", task_dir);
  scoped_home home(fake_home);

  sandbox_scratch scratch(tmp / "kblaster-sandbox-test", "deny");
  sandbox_policy policy;
  policy.scratch = scratch.path();
  policy.readable = {task.path().parent_path()};
  policy.gpu = false;

  std::vector<fs::path> planted{in_tmp.path(), in_fake_home.path(), fake_ssh_key.path()};
  if (in_real_home) planted.push_back(in_real_home->path());
  else MESSAGE("the real home folder is not writable here: only the test's own home is planted");
  std::string script;
  for (const auto& p : planted) {
    // By path (cat, and the shell's own open), and by listing its folder.
    script += "cat '" + p.string() + "' 2>/dev/null; read -r line < '" + p.string() + "' 2>/dev/null && echo \"$line\"; ";
    script += "ls -a '" + p.parent_path().string() + "' 2>/dev/null | grep -q '" + p.filename().string() + "' && echo LISTED:" +
              p.filename().string() + "; ";
  }
  script += "ls /tmp /home /root /work /srv /mnt /media 2>/dev/null | grep -q kblaster-deny && echo LISTED:tmp; ";
  script += "grep -r -l -s '" + secret + "' /tmp 2>/dev/null | head -1; ";
  // What it must still reach: its task (read-only), the toolchain, its scratch.
  script += "grep -q the-task '" + task.path().string() + "' && echo ok-task; ";
  script += "echo x > '" + task.path().parent_path().string() + "/written' 2>/dev/null && echo TASK-WRITABLE; ";
  script += "echo x > \"$HOME/scratch-file\" && echo ok-scratch; ";
  script += "test -r /etc/passwd && test -x /usr/bin/env && echo ok-system; ";
  script += "if command -v cc >/dev/null; then printf 'int main(void){return 0;}' > \"$HOME/t.c\" && "
            "cc -o \"$HOME/t\" \"$HOME/t.c\" && \"$HOME/t\" && echo ok-compiler; else echo ok-compiler; fi; true";
  const auto r = run_job(policy, script);
  INFO("output: " << r.out << r.err);
  REQUIRE(r.ok());
  CHECK(r.out.find(secret) == std::string::npos);
  CHECK(r.out.find("LISTED:") == std::string::npos);
  CHECK(r.out.find("ok-task") != std::string::npos);
  CHECK(r.out.find("TASK-WRITABLE") == std::string::npos);
  CHECK(r.out.find("ok-scratch") != std::string::npos);
  CHECK(r.out.find("ok-system") != std::string::npos);
  CHECK(r.out.find("ok-compiler") != std::string::npos);
  CHECK(fs::exists(scratch.path() / "scratch-file"));
}

TEST_CASE("sandbox: a readable folder too broad to show (the home folder, /, /tmp) is left out") {
  const fs::path fake_home = fs::temp_directory_path() / unique("broad-home");
  planted_file secret(fake_home / "notes.txt", "sk-kblaster-broad", fake_home);
  scoped_home home(fake_home);
  CHECK(sandbox_too_broad("/"));
  CHECK(sandbox_too_broad(fake_home));
  CHECK(sandbox_too_broad(fs::temp_directory_path()));
  CHECK(sandbox_too_broad("/home"));
  CHECK_FALSE(sandbox_too_broad(secret.path()));  // a file shows only itself
  CHECK_FALSE(sandbox_too_broad("/usr/lib"));
  sandbox_scratch scratch(fs::temp_directory_path() / "kblaster-sandbox-test", "broad");
  sandbox_policy policy;
  policy.scratch = scratch.path();
  policy.readable = {"/", fake_home, fs::temp_directory_path()};
  policy.gpu = false;
  const auto view = sandbox_view(policy);
  for (const auto& m : view) {
    CAPTURE(m.path);
    CHECK(m.path != "/");
    CHECK(m.path != fake_home);
    const bool tmp_shown = m.path == fs::temp_directory_path() && m.how != sandbox_mount::access::empty;
    CHECK_FALSE(tmp_shown);
  }
  if (!sandbox_support().active()) return;
  const auto r = run_job(policy, "cat '" + secret.path().string() + "' 2>/dev/null; true");
  CHECK(r.out.find("sk-kblaster-broad") == std::string::npos);
}

TEST_CASE("sandbox: ncu's folders: its installation, and the standalone Nsight Compute a toolkit's ncu script runs") {
  // On the GPU machine /usr/local/cuda/bin/ncu is the toolkit's script and Nsight Compute is
  // installed apart, under /opt/nvidia/nsight-compute: shown the toolkit alone, ncu said "Nsight
  // Compute is not installed on your system" and every profile in the sandbox fell back to static.
  const fs::path root = fs::temp_directory_path() / unique("ncu-folders");
  planted_file nvcc(root / "cuda" / "bin" / "nvcc", "#!/bin/sh", root);
  planted_file script(root / "cuda" / "bin" / "ncu", "#!/bin/sh");
  planted_file standalone(root / "opt-nvidia" / "nsight-compute" / "2025.3.1" / "ncu", "#!/bin/sh");
  const fs::path apart = root / "opt-nvidia" / "nsight-compute";
  const auto toolkit_alone = ncu_folders(script.path(), apart);
  REQUIRE(toolkit_alone.size() == 2);
  CHECK(toolkit_alone[0] == fs::canonical(root / "cuda"));
  CHECK(toolkit_alone[1] == apart);
  // Nsight Compute beside the toolkit: the script runs that one; nothing else is shown.
  planted_file beside(root / "cuda" / "nsight-compute-2025.3.1" / "ncu", "#!/bin/sh");
  CHECK(ncu_folders(script.path(), apart) == std::vector<fs::path>{fs::canonical(root / "cuda")});
  // Not a toolkit's (a standalone ncu, a stand-in script): its own folder only.
  CHECK(ncu_folders(standalone.path(), apart) == std::vector<fs::path>{fs::canonical(standalone.path().parent_path())});
}

TEST_CASE("sandbox: every entry of the view says why it is there") {
  sandbox_policy policy;
  policy.scratch = fs::temp_directory_path();  // not shown (too broad), but the list is built
  for (const auto& m : sandbox_view(policy)) {
    CAPTURE(m.path);
    CHECK_FALSE(m.why.empty());
  }
  const auto system = sandbox_system_view(false);
  const auto shows = [&](const fs::path& p) {
    return std::any_of(system.begin(), system.end(), [&](const sandbox_mount& m) { return m.path == p; });
  };
  CHECK(shows("/usr"));
  CHECK(shows("/tmp"));  // as an empty private folder
  CHECK_FALSE(shows("/home"));
  CHECK_FALSE(shows("/"));
}

TEST_CASE("a candidate's text is bounded, marked as its own and stripped of terminal escapes") {
  CHECK(candidate_text("").empty());
  const auto short_text = candidate_text("boom");
  CHECK(short_text == "the candidate's own message (untrusted): \"boom\"");
  const std::string big(5000, 'a');
  const auto cut = candidate_text(big);
  CHECK(cut.size() < candidate_text_limit + 100);
  CHECK(cut.find("[... 2952 bytes cut]") != std::string::npos);
  const auto tail = candidate_text(std::string(3000, 'b') + "END", "output", 100, keep_end::tail);
  CHECK(tail.find("END\"") != std::string::npos);
  CHECK(tail.find("bytes cut]") != std::string::npos);
  CHECK(candidate_text("\x1b[31mred\x07").find('\x1b') == std::string::npos);
  // A cut never splits a UTF-8 character.
  const auto utf8 = candidate_text("\xc3\xa9\xc3\xa9\xc3\xa9", "message", 3);
  CHECK(utf8.find("\"\xc3\xa9\"") != std::string::npos);
}
