// The one stop-aware wait: for a condition (answers in a folder, a lock taken, a child gone, a
// signal's flag), for a deadline, or for a pause, each ended at once by a std::stop_token. Every
// loop that used to sleep in slices and check `stop_requested()` between them waits here instead:
// the stop wakes the sleeper through a callback on the token rather than being noticed at the
// next slice.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>

namespace kblaster::support {

using wait_clock = std::chrono::steady_clock;

/// Sleeps `pause` unless `stop` is requested first (or was already); true when the whole pause
/// passed, false when the stop ended it.
bool sleep_unless_stopped(wait_clock::duration pause, std::stop_token stop);

/// Looks at `done` every `poll` until it is true (true), `deadline` passes or `stop` is requested
/// (false). `done` is looked at first, so a condition already met never waits; and once more at
/// the deadline. `poll` is how stale the answer may be for a condition nothing signals (a file,
/// a lock of another process, a child's end).
bool wait_until(const std::function<bool()>& done, std::stop_token stop, wait_clock::time_point deadline,
                wait_clock::duration poll);

/// wait_until without a deadline: only `done` or the stop ends it.
bool wait_until(const std::function<bool()>& done, std::stop_token stop, wait_clock::duration poll);

}  // namespace kblaster::support
