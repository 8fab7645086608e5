// libkblaster-capture.so: the capture agent. Preloaded (LD_PRELOAD) into the user's own program,
// built with `nvcc -cudart shared`, it records one launch of one kernel: the launch
// configuration, the parameter bytes, and every device allocation a parameter points into,
// before the launch and after it has finished. kblaster turns that folder into a task whose
// reference is the original kernel (engine/capture/).
//
// Then it runs the launch a second time from the same memory, to see whether the original gives
// the same results every time (atomics in floating point, races do not): an allocation that comes
// out different is recorded as varying, with its second run's contents, and the task widens that
// output's tolerance only. The first run's results are put back before the program goes on, so
// that it continues as if the kernel had run once. Memory that the capture does not see (a
// __device__ variable, memory reached through a pointer stored in device memory) is not put back:
// a kernel that writes there sees the second run's effect too. KBLASTER_CAPTURE_REPEAT=0 turns the
// second run off (capture.json then says that determinism was not checked).
//
// Why `__cudaLaunchKernel`: since CUDA 12.x, `k<<<g, b, s, st>>>(…)` compiles to
// `__cudaGetKernel` then `__cudaLaunchKernel` (or its per-thread-stream twin) in libcudart, and
// never calls the public cudaLaunchKernel. A program linked with the static cudart cannot be
// intercepted this way; kblaster builds the program itself, with the shared one.
//
// Configuration (environment; without KBLASTER_CAPTURE_DIR the agent only forwards):
//   KBLASTER_CAPTURE_DIR        the folder to write (created)
//   KBLASTER_CAPTURE_KERNEL     the kernel, unqualified or qualified ("stencil", "ns::stencil")
//   KBLASTER_CAPTURE_LAUNCH     which of its launches, counting from 0 (default 0)
//   KBLASTER_CAPTURE_MAX_BYTES  refuse a capture whose allocations exceed this (default 2 GiB)
//   KBLASTER_CAPTURE_REPEAT     0: launch once only, without the determinism check (default 1)
//
// What it writes: capture.json (docs/capture-format.md) and, per allocation i,
// alloc-i.before.bin, when the launch changed it alloc-i.after.bin, and when the second run left
// it different from the first alloc-i.again.bin. A launch it cannot capture faithfully writes
// capture.json with "refusal" naming the reason, never a wrong capture.
//
// This file includes nothing of the project: it is loaded into programs that are not ours.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;
using launch_fn = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);

constexpr std::uint64_t default_max_bytes = 2ull << 30;

struct settings {
  std::string dir, kernel;
  long launch = 0;
  std::uint64_t max_bytes = default_max_bytes;
  bool repeat = true;  // run the launch a second time to see whether its results vary
  bool active = false;
};

settings read_settings() {
  settings s;
  if (const char* d = std::getenv("KBLASTER_CAPTURE_DIR")) s.dir = d;
  if (const char* k = std::getenv("KBLASTER_CAPTURE_KERNEL")) s.kernel = k;
  if (const char* n = std::getenv("KBLASTER_CAPTURE_LAUNCH")) s.launch = std::strtol(n, nullptr, 10);
  if (const char* m = std::getenv("KBLASTER_CAPTURE_MAX_BYTES")) s.max_bytes = std::strtoull(m, nullptr, 10);
  if (const char* r = std::getenv("KBLASTER_CAPTURE_REPEAT")) s.repeat = std::strcmp(r, "0") != 0;
  s.active = !s.dir.empty() && !s.kernel.empty();
  return s;
}

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}

// Whether the demangled `name` ("void ns::k<float>(float*, int)", "k(float*)") is `wanted`:
// the qualified name must end just before the template arguments or the parameter list, and
// start at a scope boundary.
bool names_kernel(const std::string& name, const std::string& wanted) {
  for (auto at = name.find(wanted); at != std::string::npos; at = name.find(wanted, at + 1)) {
    const auto end = at + wanted.size();
    const bool starts = at == 0 || name[at - 1] == ' ' || name[at - 1] == ':' || name[at - 1] == '*';
    const bool ends = end < name.size() && (name[end] == '(' || name[end] == '<');
    if (starts && ends) return true;
  }
  return false;
}

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

bool write_file(const std::string& path, const void* data, std::size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

std::string cu_error(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "CUDA error " + std::to_string(static_cast<int>(r));
}

// A kernel that holds its stream until the host sets a flag, so that a launch is queued behind
// it and timed from when the GPU reaches it, not from when the host began the launch call (on
// an idle GPU a single launch timed with events otherwise includes the launch's host latency):
// nvbench's blocking kernel. PTX, so that the agent needs no device compiler; JIT-compiled once.
// Evicts the launch's memory from L2 before it is timed, as the judge's batches and nvbench
// measure: reading the allocations back (just above) leaves a working set that fits in L2
// resident there, a state of the capture rather than of the program, and the figures of the
// program and of the harness would then differ by the cache alone. A memset of twice the L2
// over a scratch buffer of the agent's own, queued before the timed launch; without the memory
// for it the launch is timed as it is, and capture.json says so.
class l2_flusher {
 public:
  l2_flusher() {
    CUdevice dev = 0;
    int l2 = 0;
    if (cuCtxGetDevice(&dev) != CUDA_SUCCESS || cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS || l2 <= 0) {
      problem_ = "the L2 size is unknown";
      return;
    }
    bytes_ = 2 * static_cast<std::size_t>(l2);
    if (cuMemAlloc(&scratch_, bytes_) != CUDA_SUCCESS) {
      scratch_ = 0;
      problem_ = "no device memory left for a " + std::to_string(bytes_) + "-byte flush";
    }
  }
  ~l2_flusher() {
    if (scratch_) cuMemFree(scratch_);
  }
  l2_flusher(const l2_flusher&) = delete;
  l2_flusher& operator=(const l2_flusher&) = delete;
  /// Queues the flush on `stream`; false when it cannot (problem() says why).
  bool flush(CUstream stream) {
    if (!scratch_) return false;
    if (cuMemsetD32Async(scratch_, 0, bytes_ / 4, stream) != CUDA_SUCCESS) {
      problem_ = "the flush's memset failed";
      return false;
    }
    return true;
  }
  const std::string& problem() const { return problem_; }

 private:
  CUdeviceptr scratch_ = 0;
  std::size_t bytes_ = 0;
  std::string problem_;
};

class launch_blocker {
 public:
  launch_blocker() {
    static const char* ptx =
        ".version 6.0\n.target sm_50\n.address_size 64\n"
        ".visible .entry kb_block(.param .u64 flag) {\n"
        "  .reg .u64 %rd<5>;\n  .reg .u32 %r<2>;\n  .reg .pred %p<3>;\n"
        "  ld.param.u64 %rd1, [flag];\n"
        "  mov.u64 %rd2, %globaltimer;\n"
        "WAIT:\n  ld.volatile.global.u32 %r1, [%rd1];\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra DONE;\n"
        // Never more than a second: a host that never releases it cannot hang the program.
        "  mov.u64 %rd3, %globaltimer;\n  sub.u64 %rd4, %rd3, %rd2;\n  setp.lt.u64 %p2, %rd4, 1000000000;\n  @%p2 bra WAIT;\n"
        "DONE:\n  ret;\n}\n";
    if (cuModuleLoadData(&module_, ptx) != CUDA_SUCCESS) {
      fail("loading its PTX");
      return;
    }
    if (cuModuleGetFunction(&spin_, module_, "kb_block") != CUDA_SUCCESS) {
      fail("finding its entry");
      return;
    }
    void* host = nullptr;
    if (cuMemHostAlloc(&host, sizeof(unsigned), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
      fail("allocating its flag");
      return;
    }
    flag_ = static_cast<volatile unsigned*>(host);
    if (cuMemHostGetDevicePointer(&device_flag_, host, 0) != CUDA_SUCCESS) {
      fail("mapping its flag");
      return;
    }
    ok_ = true;
  }
  ~launch_blocker() {
    if (flag_) cuMemFreeHost(const_cast<unsigned*>(flag_));
    if (module_) cuModuleUnload(module_);
  }
  launch_blocker(const launch_blocker&) = delete;
  launch_blocker& operator=(const launch_blocker&) = delete;
  /// Queues the blocking kernel on `stream`; false (and nothing queued) when it cannot.
  bool hold(CUstream stream) {
    if (!ok_) return false;
    *flag_ = 0;
    void* args[] = {&device_flag_};
    if (cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr) != CUDA_SUCCESS) {
      fail("launching it");
      return false;
    }
    return true;
  }
  void release() {
    if (flag_) *flag_ = 1;
  }
  const std::string& problem() const { return problem_; }

 private:
  void fail(const std::string& what) {
    ok_ = false;
    problem_ = "the blocking kernel failed (" + what + ")";
  }
  CUmodule module_ = nullptr;
  CUfunction spin_ = nullptr;
  volatile unsigned* flag_ = nullptr;
  CUdeviceptr device_flag_ = 0;
  bool ok_ = false;
  std::string problem_;
};

struct allocation {
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  std::vector<unsigned char> before, after;
  bool varies = false;  // the second run left it different from the first
};

// A parameter's bytes and where its device pointers are, to launch the kernel on other memory.
struct param_copy {
  struct pointer {
    std::size_t at;          // byte offset in the parameter
    std::size_t allocation;  // which allocation it points into
    std::uint64_t offset;    // from that allocation's start
  };
  std::vector<unsigned char> bytes;
  std::vector<pointer> pointers;
};

// Clears the CUDA runtime's last error after a launch of our own failed, so that the program's
// next cudaGetLastError() does not report our failure as its own. Looked up at run time: the
// agent links only the driver API, and the program's cudart is the one loaded.
void clear_runtime_error() {
  using get_last_error_fn = cudaError_t (*)();
  if (const auto f = reinterpret_cast<get_last_error_fn>(dlsym(RTLD_DEFAULT, "cudaGetLastError"))) f();
}

class agent {
 public:
  agent() : settings_(read_settings()) {}

  ~agent() {
    // The program ended: if the launch was never seen, say so (and what was launched instead).
    if (!settings_.active || done_) return;
    std::lock_guard lock(mutex_);
    json seen = json::object();
    for (const auto& [k, n] : launches_) seen[k] = n;
    const long n = matching_launches_;
    write_refusal(n == 0 ? "not_launched" : "too_few_launches",
                  n == 0 ? "the program ran to its end without launching " + settings_.kernel +
                               (launches_.empty() ? " (it launched no kernel through <<<>>>)" : "")
                         : "the program launched " + settings_.kernel + " " + std::to_string(n) +
                               " time(s); launch " + std::to_string(settings_.launch) + " was asked for",
                  "", seen);
  }

  cudaError_t launch(launch_fn real, cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                     cudaStream_t stream, bool per_thread) {
    if (!settings_.active || done_ || in_capture_) return real(kernel, grid, block, args, shared, stream);
    std::unique_lock lock(mutex_);
    const char* mangled = nullptr;
    if (cuKernelGetName(&mangled, reinterpret_cast<CUkernel>(kernel)) != CUDA_SUCCESS || !mangled)
      return real(kernel, grid, block, args, shared, stream);
    const std::string name = demangle(mangled);
    ++launches_[name];
    if (!names_kernel(name, settings_.kernel) || matching_launches_++ != settings_.launch)
      return real(kernel, grid, block, args, shared, stream);
    done_ = true;
    in_capture_ = true;
    const auto result = capture(real, kernel, mangled, name, grid, block, args, shared, stream, per_thread);
    in_capture_ = false;
    return result;
  }

 private:
  settings settings_;
  std::mutex mutex_;
  std::map<std::string, long> launches_;
  long matching_launches_ = 0;
  bool done_ = false;
  bool in_capture_ = false;

  void write_refusal(const std::string& reason, const std::string& message, const std::string& kernel,
                     const json& seen = json::object()) {
    ::mkdir(settings_.dir.c_str(), 0700);
    json j{{"format", 1}, {"kernel", {{"requested", settings_.kernel}, {"name", kernel}}},
           {"refusal", {{"reason", reason}, {"message", message}}}, {"launches_seen", seen}};
    const auto text = j.dump(2) + "\n";
    write_file(settings_.dir + "/capture.json", text.data(), text.size());
  }

  cudaError_t refuse(launch_fn real, cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                     cudaStream_t stream, const std::string& reason, const std::string& message,
                     const std::string& name) {
    write_refusal(reason, message, name);
    return real(kernel, grid, block, args, shared, stream);
  }

  // Runs the captured launch a second time from the memory it started from, and compares what
  // it leaves with the first run's results (`after`, already read). An allocation that differs
  // is marked varying and its second contents written as alloc-i.again.bin. Then the first run's
  // results go back into device memory, so that the program goes on as if the launch had run
  // once. Returns capture.json's "determinism": checked, or not and why; a failure here never
  // spoils the capture itself.
  json run_again(launch_fn real, cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream,
                 std::vector<allocation>& allocs, const std::string& name) {
    if (!settings_.repeat) return {{"checked", false}, {"reason", "the second run was turned off (KBLASTER_CAPTURE_REPEAT=0)"}};
    std::vector<std::string> again_files;
    // Puts the first run's results back (all of them: after a failure, which allocations still
    // hold them is not known) and gives up the check, saying why.
    const auto not_checked = [&](std::string reason) -> json {
      for (auto& a : allocs) a.varies = false;
      for (const auto& f : again_files) std::remove(f.c_str());
      bool restored = true;
      for (const auto& a : allocs) restored = cuMemcpyHtoD(a.base, a.after.data(), a.bytes) == CUDA_SUCCESS && restored;
      if (!restored) {
        reason += "; the first run's results could not be put back, so the program's later work may differ from a run "
                  "without the capture (KBLASTER_CAPTURE_REPEAT=0 launches once)";
        std::fprintf(stderr, "kblaster capture: %s\n", reason.c_str());
      }
      return {{"checked", false}, {"reason", reason}};
    };
    for (const auto& a : allocs)
      if (a.after != a.before)
        if (const auto r = cuMemcpyHtoD(a.base, a.before.data(), a.bytes); r != CUDA_SUCCESS)
          return not_checked("restoring the memory for a second run of " + name + ": " + cu_error(r));
    const cudaError_t launched = real(kernel, grid, block, args, shared, stream);
    const CUresult synced = cuCtxSynchronize();
    if (launched != cudaSuccess || synced != CUDA_SUCCESS) {
      clear_runtime_error();
      return not_checked("the second run of " + name + " failed: " +
                         (synced != CUDA_SUCCESS ? cu_error(synced) : "launch error " + std::to_string(launched)));
    }
    std::vector<unsigned char> again;  // one allocation at a time: the second copy of all would double the memory held
    for (std::size_t i = 0; i < allocs.size(); ++i) {
      auto& a = allocs[i];
      again.resize(a.bytes);
      if (const auto r = cuMemcpyDtoH(again.data(), a.base, a.bytes); r != CUDA_SUCCESS)
        return not_checked("reading the memory after a second run of " + name + ": " + cu_error(r));
      a.varies = again != a.after;
      if (!a.varies) continue;  // the device holds the first run's results already
      const std::string file = settings_.dir + "/alloc-" + std::to_string(i) + ".again.bin";
      again_files.push_back(file);
      if (!write_file(file, again.data(), a.bytes)) return not_checked("writing " + file + " failed");
      if (const auto r = cuMemcpyHtoD(a.base, a.after.data(), a.bytes); r != CUDA_SUCCESS)
        return not_checked("putting back the first run's results of " + name + ": " + cu_error(r));
    }
    return {{"checked", true}};
  }

  // The launch timed as the judge times a candidate: calls back to back, each on a fresh copy of
  // the launch's memory that L2 has not seen, the figure per call the difference between a full
  // and a half batch (so that the first call's ramp-up and the last one's drain cancel), median
  // of three. A lone launch pays that ramp-up and drain in full, which is most of a 5-10 us
  // kernel's difference between the two ways of timing. The copies are the agent's own: the
  // program's memory is not touched (memory that the capture does not see, a __device__
  // variable or a pointer stored in device memory, is, as in the second run above).
  json time_batch(launch_fn real, cudaKernel_t kernel, dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                  CUstream cu_stream, const std::vector<allocation>& allocs, const std::vector<param_copy>& params,
                  std::uint64_t total) {
    if (!settings_.repeat) return {{"measured", false}, {"reason", "repeated launches are off (KBLASTER_CAPTURE_REPEAT=0)"}};
    std::size_t free_bytes = 0, device_bytes = 0;
    cuMemGetInfo(&free_bytes, &device_bytes);
    // As many calls as the judge would make of a short kernel, over as much memory (a quarter of
    // what is free, 12 GiB at most): calls spread over gigabytes pay for address translation as
    // well as for cold caches, and the two figures must be of the same thing.
    const std::uint64_t budget = std::min<std::uint64_t>(free_bytes / 4, 12ull << 30);
    const std::uint64_t per_call = std::max<std::uint64_t>(total, 1);
    const int calls = static_cast<int>(std::min<std::uint64_t>(budget / per_call, 512)) & ~1;
    if (calls < 8)
      return {{"measured", false}, {"reason", "the launch's memory is too large for 8 copies; a lone launch is long enough to time"}};
    std::vector<CUdeviceptr> slots;  // calls x allocations
    const auto free_slots = [&] { for (auto p : slots) cuMemFree(p); };
    for (int c = 0; c < calls; ++c)
      for (const auto& a : allocs) {
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, a.bytes) != CUDA_SUCCESS || cuMemcpyHtoD(p, a.before.data(), a.bytes) != CUDA_SUCCESS) {
          if (p) cuMemFree(p);
          free_slots();
          return {{"measured", false}, {"reason", "no device memory for the copies"}};
        }
        slots.push_back(p);
      }
    // One call's parameters, relocated to its own copies (the runtime copies them at the launch).
    std::vector<std::vector<unsigned char>> bytes(params.size());
    std::vector<void*> pointers(params.size());
    const auto launch = [&](int c) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        bytes[i] = params[i].bytes;
        for (const auto& p : params[i].pointers) {
          const std::uint64_t word = slots[static_cast<std::size_t>(c) * allocs.size() + p.allocation] + p.offset;
          std::memcpy(bytes[i].data() + p.at, &word, 8);
        }
        pointers[i] = bytes[i].data();
      }
      return real(kernel, grid, block, pointers.data(), shared, stream) == cudaSuccess;
    };
    l2_flusher flusher;
    CUevent start = nullptr, stop = nullptr;
    cuEventCreate(&start, CU_EVENT_DEFAULT);
    cuEventCreate(&stop, CU_EVENT_DEFAULT);
    const auto batch_ms = [&](int n) -> double {
      flusher.flush(cu_stream);
      launch_blocker blocker;
      blocker.hold(cu_stream);
      cuEventRecord(start, cu_stream);
      bool ok = true;
      for (int c = 0; c < n; ++c) ok = launch(c) && ok;
      cuEventRecord(stop, cu_stream);
      blocker.release();
      if (cuCtxSynchronize() != CUDA_SUCCESS || !ok) return -1;
      float ms = 0;
      cuEventElapsedTime(&ms, start, stop);
      return ms;
    };
    std::vector<double> per_call_ms;
    bool failed = false;
    for (int r = 0; r < 3 && !failed; ++r) {
      const double half = batch_ms(calls / 2), full = batch_ms(calls);
      failed = half < 0 || full < 0;
      per_call_ms.push_back((full - half) / (calls / 2));
    }
    cuEventDestroy(start);
    cuEventDestroy(stop);
    free_slots();
    if (failed) {
      clear_runtime_error();
      return {{"measured", false}, {"reason", "a repeated launch failed"}};
    }
    std::sort(per_call_ms.begin(), per_call_ms.end());
    return {{"measured", true}, {"calls", calls}, {"per_call_ms", per_call_ms[1]}, {"l2_flushed", flusher.problem().empty()}};
  }

  cudaError_t capture(launch_fn real, cudaKernel_t kernel, const char* mangled, const std::string& name, dim3 grid,
                      dim3 block, void** args, size_t shared, cudaStream_t stream, bool per_thread) {
    const auto refused = [&](const std::string& reason, const std::string& message) {
      return refuse(real, kernel, grid, block, args, shared, stream, reason, message, name);
    };
    const CUstream cu_stream = stream == nullptr && per_thread ? CU_STREAM_PER_THREAD : reinterpret_cast<CUstream>(stream);
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cuStreamIsCapturing(cu_stream, &capturing) == CUDA_SUCCESS && capturing != CU_STREAM_CAPTURE_STATUS_NONE)
      return refused("graph", "the launch of " + name + " is being recorded into a CUDA graph; launches inside graphs cannot be captured");
    // Everything queued before this launch must have happened: the "before" state is the launch's input.
    if (const auto r = cuCtxSynchronize(); r != CUDA_SUCCESS)
      return refused("cuda_error", "the program's earlier work failed before " + name + ": " + cu_error(r));

    // The parameter layout, from the driver (a by-value struct is one parameter of its size).
    json params = json::array();
    std::vector<allocation> allocs;
    std::map<CUdeviceptr, std::size_t> alloc_index;
    std::uint64_t total = 0;
    bool hidden_pointers = false;
    std::vector<param_copy> copies;
    for (std::size_t i = 0;; ++i) {
      std::size_t offset = 0, size = 0;
      if (cuKernelGetParamInfo(reinterpret_cast<CUkernel>(kernel), i, &offset, &size) != CUDA_SUCCESS) break;
      const auto* bytes = static_cast<const unsigned char*>(args[i]);
      copies.push_back({std::vector<unsigned char>(bytes, bytes + size), {}});
      json p{{"index", i}, {"offset", offset}, {"size", size}, {"bytes", hex(bytes, size)}, {"pointers", json::array()}};
      // Any aligned 8-byte word holding a device address is a pointer to relocate at replay.
      for (std::size_t at = 0; at + 8 <= size; at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes + at, 8);
        if (word == 0) continue;
        CUdeviceptr base = 0;
        std::size_t bytes_in = 0;
        if (cuMemGetAddressRange(&base, &bytes_in, static_cast<CUdeviceptr>(word)) != CUDA_SUCCESS) continue;
        unsigned int managed = 0;
        cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, static_cast<CUdeviceptr>(word));
        if (managed)
          return refused("managed_memory", "parameter " + std::to_string(i) + " of " + name +
                                               " points into managed (cudaMallocManaged) memory, which a capture cannot restore faithfully");
        unsigned int type = 0;
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(word));
        if (type != CU_MEMORYTYPE_DEVICE)
          return refused("host_memory", "parameter " + std::to_string(i) + " of " + name +
                                            " points into host memory mapped for the device; only device allocations are captured");
        if (size != 8) hidden_pointers = true;
        auto [it, fresh] = alloc_index.try_emplace(base, allocs.size());
        if (fresh) {
          allocs.push_back({base, bytes_in, {}, {}, false});
          total += bytes_in;
        }
        p["pointers"].push_back({{"at", at}, {"allocation", it->second}, {"offset", word - base}});
        copies.back().pointers.push_back({at, it->second, word - base});
      }
      params.push_back(std::move(p));
    }
    if (total > settings_.max_bytes)
      return refused("too_large", "the allocations that the parameters of " + name + " point into total " +
                                      std::to_string(total) + " bytes, over the capture cap of " +
                                      std::to_string(settings_.max_bytes) + " bytes (--max-capture-bytes)");
    for (auto& a : allocs) {
      a.before.resize(a.bytes);
      if (const auto r = cuMemcpyDtoH(a.before.data(), a.base, a.bytes); r != CUDA_SUCCESS)
        return refused("cuda_error", "reading an allocation of " + name + " before the launch: " + cu_error(r));
    }

    // With lazy loading (CUDA's default since 12.2) the first launch of a kernel loads its module
    // inside the launch call, between the events: load it first, so that the time is the
    // kernel's and not the loader's.
    CUfunction loaded = nullptr;
    cuKernelGetFunction(&loaded, reinterpret_cast<CUkernel>(kernel));
    CUevent start = nullptr, stop = nullptr;
    cuEventCreate(&start, CU_EVENT_DEFAULT);
    cuEventCreate(&stop, CU_EVENT_DEFAULT);
    l2_flusher flusher;
    const bool flushed = flusher.flush(cu_stream);
    launch_blocker blocker;
    const bool blocked = blocker.hold(cu_stream);
    cuEventRecord(start, cu_stream);
    const cudaError_t result = real(kernel, grid, block, args, shared, stream);
    cuEventRecord(stop, cu_stream);
    blocker.release();
    const CUresult synced = cuCtxSynchronize();
    json timing = blocked ? json{{"blocked", true}} : json{{"blocked", false}, {"reason", blocker.problem()}};
    timing["l2_flushed"] = flushed;
    if (!flushed) timing["l2_reason"] = flusher.problem();
    float ms = 0;
    cuEventElapsedTime(&ms, start, stop);
    cuEventDestroy(start);
    cuEventDestroy(stop);
    if (result != cudaSuccess || synced != CUDA_SUCCESS) {
      write_refusal("launch_failed", name + " failed in the program itself: " +
                                         (synced != CUDA_SUCCESS ? cu_error(synced) : "launch error " + std::to_string(result)),
                    name);
      return result;
    }

    ::mkdir(settings_.dir.c_str(), 0700);
    for (auto& a : allocs) {
      a.after.resize(a.bytes);
      cuMemcpyDtoH(a.after.data(), a.base, a.bytes);
    }
    const json determinism = run_again(real, kernel, grid, block, args, shared, stream, allocs, name);
    const json batch = time_batch(real, kernel, grid, block, shared, stream, cu_stream, allocs, copies, total);
    const bool checked = determinism.at("checked").get<bool>();
    json allocations = json::array();
    for (std::size_t i = 0; i < allocs.size(); ++i) {
      auto& a = allocs[i];
      // Changed by either run: a kernel that writes an allocation only some of the times it runs
      // writes it (its output is then compared, and its variation seen).
      const bool written = a.after != a.before || a.varies;
      const std::string stem = "alloc-" + std::to_string(i);
      write_file(settings_.dir + "/" + stem + ".before.bin", a.before.data(), a.bytes);
      json entry{{"index", i}, {"bytes", a.bytes}, {"before", stem + ".before.bin"}, {"written", written}};
      if (written) {
        write_file(settings_.dir + "/" + stem + ".after.bin", a.after.data(), a.bytes);
        entry["after"] = stem + ".after.bin";
      }
      if (checked) entry["varies"] = a.varies;
      if (a.varies) entry["again"] = stem + ".again.bin";  // written by run_again
      allocations.push_back(std::move(entry));
    }

    CUdevice dev = 0;
    cuCtxGetDevice(&dev);
    char device_name[256] = {};
    cuDeviceGetName(device_name, sizeof device_name, dev);
    int major = 0, minor = 0, sms = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);

    json j{{"format", 1},
           {"kernel", {{"requested", settings_.kernel}, {"name", name}, {"mangled", mangled}}},
           {"launch", settings_.launch},
           {"grid", {grid.x, grid.y, grid.z}},
           {"block", {block.x, block.y, block.z}},
           {"shared_bytes", shared},
           {"time_ms", ms},
           {"timing", timing},
           {"batch_timing", batch},
           {"device", {{"name", device_name}, {"compute_capability", std::to_string(major) + "." + std::to_string(minor)},
                       {"sm_count", sms}}},
           {"params", params},
           {"allocations", allocations},
           {"hidden_pointers", hidden_pointers},
           {"determinism", determinism}};
    const auto text = j.dump(2) + "\n";
    write_file(settings_.dir + "/capture.json", text.data(), text.size());
    return result;
  }
};

agent& the_agent() {
  static agent a;
  return a;
}

// Constructed at load, so that its destructor runs at the program's exit after main's statics.
[[maybe_unused]] const bool agent_ready = (the_agent(), true);

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                                                  void** args, size_t shared, cudaStream_t stream) {
  static const auto real = next_symbol<launch_fn>("__cudaLaunchKernel");
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return the_agent().launch(real, kernel, grid, block, args, shared, stream, false);
}

extern "C" __attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                                                       void** args, size_t shared,
                                                                                       cudaStream_t stream) {
  static const auto real = next_symbol<launch_fn>("__cudaLaunchKernel_ptsz");
  if (!real) return cudaErrorSharedObjectSymbolNotFound;
  return the_agent().launch(real, kernel, grid, block, args, shared, stream, true);
}
