// Where candidates and references run: the CPU (Debian's LibTorch, candidates built by g++ as
// host code) or a CUDA GPU (a CUDA LibTorch). Hides the few CUDA runtime calls the harness
// makes, so that the rest of the harness is the same on both paths.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace kblaster::harness {

/// A CUDA error that leaves the context unusable (illegal address, launch failure...): the
/// harness replies with it and exits, and the engine starts a fresh one.
class fatal_device_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The device of this harness process. Not thread-safe; the harness is single-threaded.
class device_context {
 public:
  /// "cpu", "cuda" or "auto" (CUDA when this build and machine have it). Throws when unavailable.
  explicit device_context(const std::string& which);
  ~device_context();
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  bool is_cuda() const { return cuda_; }
  torch::Device torch_device() const { return cuda_ ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU); }
  /// The stream handed to candidates (cudaStream_t; nullptr on the CPU).
  void* stream() const { return stream_; }
  /// Waits for the candidate's stream only (not other streams).
  void sync_stream();
  /// Waits for all work on the device, every stream; throws fatal_device_error on a sticky error.
  void sync_device();
  /// Clears the last (non-sticky) error and returns its text, or empty.
  std::string take_error();
  /// Evicts the L2 cache by writing a buffer twice its size (nvbench's cold measurement), enqueued
  /// on the legacy default stream without waiting. No-op on CPU.
  void flush_l2();
  /// Demotes every persisting L2 line to normal (a window set by a candidate would otherwise keep
  /// its data resident through the flush) and sets the persisting set-aside back to zero; a
  /// device-wide reset, so it reaches lines another process (a runner) left. No-op on CPU.
  void reset_l2_persistence();
  /// Enqueues a tiny operation on the legacy stream and waits for the device: on a GPU shared by
  /// time-slicing, it completes after work another context (the runner) already had running,
  /// which makes it the judge's own witness that a call's work is done. CPU: nothing to do.
  void barrier();
  /// Starts a timed region. CUDA: an event on the legacy default stream, which every blocking
  /// stream (the candidate's, LibTorch's default) waits for; CPU: the host clock.
  void timer_start();
  /// Ends the region and returns its milliseconds (CUDA: event time, then the whole device is
  /// synchronised). host_ms() gives the host time of the same region, device sync included.
  double timer_stop();
  double host_ms() const { return host_ms_; }
  /// L2 size in bytes (0 on the CPU).
  std::size_t l2_bytes() const { return l2_bytes_; }
  /// Device memory free now, in bytes (cudaMemGetInfo: LibTorch's cached blocks count as used);
  /// SIZE_MAX on the CPU.
  std::size_t free_bytes() const;
  /// "NVIDIA H100 80GB HBM3" or "cpu".
  std::string name() const { return name_; }
  /// The current SM clock in MHz and whether the GPU reports throttling (NVML when present); -1 if unknown.
  int sm_clock_mhz(bool* throttled) const;
  /// Opens an NVTX range (for ncu --nvtx-include) when built with CUDA; no-op otherwise.
  void range_push(const char* name);
  void range_pop();
  /// Returns the memory LibTorch's caching allocator keeps from finished requests to the driver:
  /// a warm harness must not sit on a KernelBench problem's 60 GB of freed inputs while the next
  /// problem's exporter, or the next runner, needs them. No-op on CPU.
  void release_cached_memory() const;

 private:
  bool cuda_ = false;
  void* stream_ = nullptr;
  void* flush_buffer_ = nullptr;
  void* start_event_ = nullptr;
  void* stop_event_ = nullptr;
  double host_ms_ = 0;
  std::chrono::steady_clock::time_point host_start_;
  std::size_t l2_bytes_ = 0;
  std::string name_ = "cpu";
  struct nvml;
  std::unique_ptr<nvml> nvml_;
};

/// True when this harness was built against a CUDA LibTorch.
bool built_with_cuda();

}  // namespace kblaster::harness
