// The CPU and CUDA implementations of device_context. CUDA runtime calls are checked where they
// are made; NVML is loaded at run time (dlopen) so that the harness does not need it to start.
#include "harness/device.h"

#include <cstdint>
#include <dlfcn.h>

#ifdef KBLASTER_HARNESS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace kblaster::harness {

bool built_with_cuda() {
#ifdef KBLASTER_HARNESS_CUDA
  return true;
#else
  return false;
#endif
}

// NVML's clock and throttle queries, found at run time.
struct device_context::nvml {
  void* lib = nullptr;
  void* device = nullptr;
  int (*get_clock)(void*, int, unsigned*) = nullptr;
  int (*get_reasons)(void*, unsigned long long*) = nullptr;
  ~nvml() {
    if (lib) dlclose(lib);
  }
};

#ifdef KBLASTER_HARNESS_CUDA
namespace {
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const std::string msg = std::string(what) + ": " + cudaGetErrorString(e);
  // Errors after which the context cannot be trusted.
  if (e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
      e == cudaErrorIllegalInstruction || e == cudaErrorHardwareStackError || e == cudaErrorAssert ||
      e == cudaErrorInvalidPc || e == cudaErrorLaunchTimeout)
    throw fatal_device_error(msg);
  throw std::runtime_error(msg);
}
#define KB_CUDA(call) check((call), #call)
}  // namespace
#endif

device_context::device_context(const std::string& which) {
  if (which != "cpu" && which != "cuda" && which != "auto")
    throw std::runtime_error("device must be cpu, cuda or auto, not '" + which + "'");
#ifdef KBLASTER_HARNESS_CUDA
  int count = 0;
  const bool have_gpu = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  if (which == "cuda" && !have_gpu) throw std::runtime_error("device cuda asked for, but no GPU is visible");
  cuda_ = which != "cpu" && have_gpu;
  if (!cuda_) return;
  KB_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  KB_CUDA(cudaGetDeviceProperties(&prop, 0));
  name_ = prop.name;
  l2_bytes_ = static_cast<std::size_t>(prop.l2CacheSize);
  // A blocking stream: the legacy default stream (LibTorch's, and the timer's events) waits for
  // it. A candidate's own non-blocking streams escape that, which is why guarded_call looks for
  // late writes and the timer also reports host time.
  cudaStream_t s = nullptr;
  KB_CUDA(cudaStreamCreate(&s));
  stream_ = s;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  KB_CUDA(cudaEventCreate(&e0));
  KB_CUDA(cudaEventCreate(&e1));
  start_event_ = e0;
  stop_event_ = e1;
  KB_CUDA(cudaMalloc(&flush_buffer_, 2 * l2_bytes_ + 1));
  nvml_ = std::make_unique<nvml>();
  nvml_->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml_->lib) {
    auto init = reinterpret_cast<int (*)()>(dlsym(nvml_->lib, "nvmlInit_v2"));
    auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(nvml_->lib, "nvmlDeviceGetHandleByIndex_v2"));
    nvml_->get_clock = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(nvml_->lib, "nvmlDeviceGetClockInfo"));
    nvml_->get_reasons = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        dlsym(nvml_->lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!nvml_->get_reasons)
      nvml_->get_reasons = reinterpret_cast<int (*)(void*, unsigned long long*)>(
          dlsym(nvml_->lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!init || !by_index || init() != 0 || by_index(0, &nvml_->device) != 0) nvml_->device = nullptr;
  }
#else
  if (which == "cuda") throw std::runtime_error("device cuda asked for, but this harness was built against a CPU LibTorch");
#endif
}

device_context::~device_context() {
#ifdef KBLASTER_HARNESS_CUDA
  if (flush_buffer_) cudaFree(flush_buffer_);
  if (start_event_) cudaEventDestroy(static_cast<cudaEvent_t>(start_event_));
  if (stop_event_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_event_));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
#endif
}

void device_context::sync_stream() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) KB_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
#endif
}

void device_context::sync_device() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) KB_CUDA(cudaDeviceSynchronize());
#endif
}

std::string device_context::take_error() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return cudaGetErrorString(e);
  }
#endif
  return {};
}

void device_context::flush_l2() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_ && flush_buffer_) {
    // On the legacy stream, ahead of the timer's start event, and not waited for: the timed
    // call's launch latency then hides behind the flush (as nvbench's blocking kernel and
    // KernelBench's timing do), so that samples measure the GPU's work.
    KB_CUDA(cudaMemsetAsync(flush_buffer_, static_cast<int>(l2_bytes_ & 0xff), 2 * l2_bytes_, cudaStreamLegacy));
  }
#endif
}

void device_context::reset_l2_persistence() {
#ifdef KBLASTER_HARNESS_CUDA
  if (!cuda_) return;
  KB_CUDA(cudaCtxResetPersistingL2Cache());
  // The set-aside may be unsupported (MIG, some parts): then there is nothing to reset.
  if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) != cudaSuccess) (void)cudaGetLastError();
#endif
}

std::size_t device_context::free_bytes() const {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    std::size_t free = 0, total = 0;
    KB_CUDA(cudaMemGetInfo(&free, &total));
    return free;
  }
#endif
  return SIZE_MAX;
}

void device_context::barrier() {
#ifdef KBLASTER_HARNESS_CUDA
  if (!cuda_ || !flush_buffer_) return;
  KB_CUDA(cudaMemsetAsync(flush_buffer_, 0, 4, cudaStreamLegacy));
  KB_CUDA(cudaDeviceSynchronize());
#endif
}

void device_context::timer_start() {
  host_start_ = std::chrono::steady_clock::now();
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) KB_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(start_event_), cudaStreamLegacy));
#endif
}

double device_context::timer_stop() {
  double ms = 0;
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    KB_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(stop_event_), cudaStreamLegacy));
    KB_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_event_)));
    KB_CUDA(cudaDeviceSynchronize());
    float f = 0;
    KB_CUDA(cudaEventElapsedTime(&f, static_cast<cudaEvent_t>(start_event_), static_cast<cudaEvent_t>(stop_event_)));
    ms = f;
  }
#endif
  host_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start_).count();
  return cuda_ ? ms : host_ms_;
}

int device_context::sm_clock_mhz(bool* throttled) const {
  if (throttled) *throttled = false;
  if (!nvml_ || !nvml_->device || !nvml_->get_clock) return -1;
  unsigned mhz = 0;
  if (nvml_->get_clock(nvml_->device, 1 /* NVML_CLOCK_SM */, &mhz) != 0) return -1;
  unsigned long long reasons = 0;
  // Thermal or power capping, hardware slowdown; not idle (0x1) or application settings (0x2).
  constexpr unsigned long long throttling = 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100;
  if (throttled && nvml_->get_reasons && nvml_->get_reasons(nvml_->device, &reasons) == 0)
    *throttled = (reasons & throttling) != 0;
  return static_cast<int>(mhz);
}

void device_context::range_push(const char* name) {
#ifdef KBLASTER_HARNESS_CUDA
  nvtxRangePushA(name);
#else
  (void)name;
#endif
}

void device_context::range_pop() {
#ifdef KBLASTER_HARNESS_CUDA
  nvtxRangePop();
#endif
}

void device_context::release_cached_memory() const {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

}  // namespace kblaster::harness
