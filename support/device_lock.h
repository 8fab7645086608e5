// One measurement on a device at a time, across every kblaster process of this user: the daemon's
// profile on save, an Optimize started right after it, a `kblaster optimize` in a terminal and a
// bench all time kernels and run ncu on the same GPU. Two at once skew each other's figures: ncu
// locks the clocks at base and replays kernels for seconds, and a kernel timed beside another
// shares its SMs and memory. The lock is flock(2) on a file per device, so it goes with the
// process that held it, however that process ends; a second file queues the waiters, so that a
// run asking again the moment it lets go does not keep the others out.
#pragma once

#include "support/unique_fd.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

namespace kblaster::support {

class device_lock {
 public:
  /// Waits for `device` ("gpu-0", a GPU's UUID...: any name, made safe for a file name) in
  /// `dir` (default: user_runtime_dir()/devices). `waiting` is called once, with who holds it
  /// (the holder's pid and what it does, as it wrote them), when the device is not free at once.
  /// nullopt when `stop` came first. Throws file_error when the lock file cannot be opened.
  static std::optional<device_lock> acquire(const std::string& device, const std::string& doing, std::stop_token stop,
                                            const std::function<void(const std::string& holder)>& waiting = {},
                                            const std::filesystem::path& dir = {});

  /// The lock's name for the GPU a process with CUDA_VISIBLE_DEVICES=`visible` uses first
  /// ("gpu-1" for "1,2"); "gpu-0" when unset. GPUs are named by nvidia-smi's index, as the
  /// evaluator's slots are.
  static std::string gpu(const std::string& visible);

  device_lock(device_lock&&) noexcept = default;
  device_lock& operator=(device_lock&&) noexcept = default;
  ~device_lock() = default;  // closing the descriptor releases the lock

  /// Seconds spent waiting for the device.
  double waited() const { return waited_; }

 private:
  device_lock(unique_fd fd, double waited) : fd_(std::move(fd)), waited_(waited) {}
  unique_fd fd_;
  double waited_ = 0;
};

}  // namespace kblaster::support
