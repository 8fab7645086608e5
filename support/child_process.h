// The one way KernelBlaster starts another program: posix_spawn (no fork of a multithreaded
// daemon, no shell), stdin chosen explicitly (under `kblaster serve` the daemon's own stdin is
// the LSP pipe, which no child may read), default signal dispositions (the daemon ignores
// SIGPIPE; its children should not inherit that), and by default its own process group, so that
// a kill reaches whatever the child started (nvcc's cicc and ptxas, a candidate's threads).
// Every child is started from one thread that lives as long as the process: a child whose
// parent-death signal is set (bwrap --die-with-parent) dies when the thread that started it
// ends, and callers' threads (the optimizer's workers) end long before the children they start.
//
// Every child started here is listed until it is reaped, so that `stop_all_children()` can end
// them all at once when the daemon exits: nobody is left to read their results.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <initializer_list>
#include <string>
#include <vector>

namespace kblaster::support {

/// Where one of the child's standard streams goes.
enum class stream { null, pipe, inherit };

struct spawn_options {
  std::optional<std::filesystem::path> cwd;
  /// "NAME=value" entries that replace (or add to) the daemon's environment for the child.
  std::vector<std::string> set_environment;
  stream in = stream::null;
  stream out = stream::pipe;
  stream err = stream::pipe;
  /// Its own process group (killed as a whole). Off for workers that should receive the
  /// terminal's Ctrl-C with their parent.
  bool own_process_group = true;
};

/// The program could not be started: `code` is the errno (ENOENT: not found, ...), or
/// ECANCELED when the daemon is exiting and starts no more children.
class spawn_error : public std::runtime_error {
 public:
  spawn_error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// A running (or finished, not yet reaped) child. Destroying it kills its process group (or
/// the child alone) with SIGKILL and reaps it: a child never outlives its owner unnoticed.
class child_process {
 public:
  /// Starts argv[0] (looked up in PATH when it has no '/'). Throws spawn_error.
  static child_process spawn(const std::vector<std::string>& argv, const spawn_options& options = {});

  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  pid_t pid() const { return pid_; }
  /// The parent's ends of the pipes asked for in spawn_options (-1 otherwise or once closed).
  int stdin_fd() const { return in_; }
  int stdout_fd() const { return out_; }
  int stderr_fd() const { return err_; }
  void close_stdin();
  void close_stdout();
  void close_stderr();

  /// Sends `sig` to the child's process group (or the child alone without one). Harmless
  /// after it ended.
  void kill(int sig) const;
  /// The raw wait status once the child has ended, without blocking; nullopt while running.
  std::optional<int> try_wait();
  /// Blocks until the child ends; its raw wait status (WIFEXITED, WTERMSIG...).
  int wait();
  /// Kills (SIGKILL) and reaps; the raw wait status. Closes the pipes.
  int kill_and_wait();

 private:
  child_process() = default;
  void release();

  pid_t pid_ = -1;
  bool own_group_ = true;
  std::optional<int> status_;
  int in_ = -1, out_ = -1, err_ = -1;
};

/// Kills every child started through child_process that has not been reaped, and makes every
/// later spawn fail with ECANCELED. For the daemon's exit and the CLI's Ctrl-C: the check and
/// the start of a spawn happen under the same lock, so no child starts after this returns.
void stop_all_children();

/// Full path of `name` found in PATH (or `name` itself if it holds a '/'), or empty.
std::string find_in_path(const std::string& name);

/// A program or library installed with kblaster: $ENV_VAR when set, else the first of
/// `relative` found in the folder of this executable or one of its parents (a build tree:
/// <build>/cli/kblaster beside <build>/harness/…), else `name` in PATH; empty when none.
std::string find_companion(const char* env_var, std::initializer_list<const char*> relative, const std::string& name);

}  // namespace kblaster::support
