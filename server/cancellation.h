// Cancellation of one piece of work: a request cancelled by the client, made stale by an
// edit, or stopped from a progress bar. Thread-safe: set from the I/O thread, read by workers.
#pragma once

#include "protocol/json_rpc.h"

#include <atomic>
#include <memory>
#include <optional>

namespace kblaster::server {

/// Shared flag saying whether, and why, some work should stop. The first reason wins.
class cancel_state {
 public:
  /// Marks the work cancelled; returns false if it already was.
  bool cancel(protocol::error_code why) noexcept {
    int expected = 0;
    return reason_.compare_exchange_strong(expected, static_cast<int>(why));
  }
  bool cancelled() const noexcept { return reason_.load(std::memory_order_relaxed) != 0; }
  std::optional<protocol::error_code> reason() const noexcept {
    const int r = reason_.load();
    if (r == 0) return std::nullopt;
    return static_cast<protocol::error_code>(r);
  }

 private:
  std::atomic<int> reason_{0};
};

using cancel_token = std::shared_ptr<cancel_state>;

/// Thrown by work that notices its token was cancelled; the dispatcher turns it into the
/// token's reason (RequestCancelled or ContentModified).
struct cancelled_error {};

}  // namespace kblaster::server
