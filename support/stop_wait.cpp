// A condition variable that nothing notifies but the token's stop callback: the pause is its
// timeout, the stop its wake-up.
#include "support/stop_wait.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace kblaster::support {

bool sleep_unless_stopped(wait_clock::duration pause, std::stop_token stop) {
  if (stop.stop_requested()) return false;
  std::mutex m;
  std::condition_variable_any woken;
  std::unique_lock lock(m);
  woken.wait_for(lock, stop, pause, [] { return false; });
  return !stop.stop_requested();
}

bool wait_until(const std::function<bool()>& done, std::stop_token stop, wait_clock::time_point deadline,
                wait_clock::duration poll) {
  for (;;) {
    if (done()) return true;
    const auto now = wait_clock::now();
    if (stop.stop_requested() || now >= deadline) return false;
    if (!sleep_unless_stopped(std::min<wait_clock::duration>(poll, deadline - now), stop)) return false;
  }
}

bool wait_until(const std::function<bool()>& done, std::stop_token stop, wait_clock::duration poll) {
  return wait_until(done, stop, wait_clock::time_point::max(), poll);
}

}  // namespace kblaster::support
