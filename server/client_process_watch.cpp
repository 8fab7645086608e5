// Polls the client's pid: signal 0 tells whether it exists without touching it.
#include "server/client_process_watch.h"

#include <signal.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>

namespace kblaster::server {

bool process_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

client_process_watch::client_process_watch(pid_t pid, std::function<void()> gone, std::chrono::milliseconds interval)
    : pid_(pid), thread_([pid, gone = std::move(gone), interval](std::stop_token stop) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        while (!stop.stop_requested()) {
          if (!process_alive(pid)) {
            gone();
            return;
          }
          cv.wait_for(lock, stop, interval, [] { return false; });
        }
      }) {}

}  // namespace kblaster::server
