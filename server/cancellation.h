// Cancellation of one piece of work: a request cancelled by the client, made stale by an
// edit, or stopped from a progress bar. Thread-safe: set from the I/O thread, read by workers.
#pragma once

#include "protocol/json_rpc.h"

#include <atomic>
#include <memory>
#include <optional>
#include <stop_token>

namespace kblaster::server {

/// Shared flag saying whether, and why, some work should stop. The first reason wins. It
/// owns a std::stop_source that cancel() requests, so that engine work holding stop_token()
/// (and the nvcc, ncu or harness it runs) stops at once, with no thread polling the flag.
class cancel_state {
 public:
  /// Marks the work cancelled and requests its stop; returns false if it already was.
  bool cancel(protocol::error_code why) noexcept {
    int expected = 0;
    const bool first = reason_.compare_exchange_strong(expected, static_cast<int>(why));
    // After the reason is set: a stop callback that asks why sees it.
    if (first) stop_.request_stop();
    return first;
  }
  /// Fires when the work is cancelled, for whatever reason.
  std::stop_token stop_token() const noexcept { return stop_.get_token(); }
  bool cancelled() const noexcept { return reason_.load(std::memory_order_relaxed) != 0; }
  std::optional<protocol::error_code> reason() const noexcept {
    const int r = reason_.load();
    if (r == 0) return std::nullopt;
    return static_cast<protocol::error_code>(r);
  }

 private:
  std::atomic<int> reason_{0};
  std::stop_source stop_;
};

using cancel_token = std::shared_ptr<cancel_state>;

/// Thrown by work that notices its token was cancelled; the dispatcher turns it into the
/// token's reason (RequestCancelled or ContentModified).
struct cancelled_error {};

}  // namespace kblaster::server
