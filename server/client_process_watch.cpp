// Polls the client's pid: signal 0 tells whether it exists without touching it.
#include "server/client_process_watch.h"

#include "support/stop_wait.h"

#include <signal.h>

#include <cerrno>

namespace kblaster::server {

bool process_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

client_process_watch::client_process_watch(pid_t pid, std::function<void()> gone, std::chrono::milliseconds interval)
    : pid_(pid), thread_([pid, gone = std::move(gone), interval](std::stop_token stop) {
        if (support::wait_until([pid] { return !process_alive(pid); }, stop, interval)) gone();
      }) {}

}  // namespace kblaster::server
