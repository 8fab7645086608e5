// Ends the daemon when the editor that started it dies without saying exit: LSP's
// `processId` in initialize, or `--clientProcessId` on the command line (what
// vscode-languageclient passes). Without this, an editor killed with SIGKILL leaves its
// daemons running, each holding a KB connection and perhaps an nvcc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <thread>

namespace kblaster::server {

class client_process_watch {
 public:
  /// Checks `pid` every `interval` on its own thread and calls `gone` once when it has ended.
  client_process_watch(pid_t pid, std::function<void()> gone,
                       std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
  std::jthread thread_;  // last: stopped and joined before anything it uses goes away
};

/// True while a process with this pid exists (EPERM counts: it exists, it is not ours).
bool process_alive(pid_t pid);

}  // namespace kblaster::server
