// kblaster-runner: loads one candidate and calls its kb_forward on memory the judge
// (kblaster-harness) shares with it, nothing more. It holds no reference, no expected output
// and no verdict, and cannot write to the engine: whatever the candidate does to this process's
// memory, clock or functions, the judge reads only the shared outputs and its own clock.
// Started by the judge inside the same sandbox, with the protocol socket as fd 3
// (harness/runner/protocol.h); it dies with the judge (PDEATHSIG) and is killed after the
// one request it serves.
#include "harness/runner/protocol.h"
#include "harness/runner/seccomp_filter.h"

#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#ifdef KBLASTER_RUNNER_CUDA
#include "harness/runner/empty_kernel.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace {

using namespace kblaster::harness::runner;
using kb_forward_fn = int (*)(const DLTensor*, int, DLTensor*, int, void*);

int sock = 3;

bool read_exact(void* data, std::size_t n, int* received_fd = nullptr) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    iovec iov{p, n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (got <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && received_fd)
        std::memcpy(received_fd, CMSG_DATA(c), sizeof(int));
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

void send_reply(reply r) {
  r.magic = protocol_magic;
  const char* p = reinterpret_cast<const char*>(&r);
  std::size_t n = sizeof(r);
  while (n > 0) {
    const ssize_t put = ::write(sock, p, n);
    if (put <= 0) std::_Exit(1);  // the judge is gone
    p += put;
    n -= static_cast<std::size_t>(put);
  }
}

reply failure(status s, const std::string& message) {
  reply r;
  r.result = s;
  std::snprintf(r.message, sizeof(r.message), "%s", message.c_str());
  return r;
}

// The device side: the CUDA context, the stream handed to candidates and the event timer.
struct device {
  bool cuda = false;
#ifdef KBLASTER_RUNNER_CUDA
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* scratch = nullptr;
#endif
  std::chrono::steady_clock::time_point host_start;

  std::string init(bool want_cuda) {
    cuda = want_cuda;
#ifdef KBLASTER_RUNNER_CUDA
    if (!cuda) return {};
    if (auto e = cudaSetDevice(0); e != cudaSuccess) return cudaGetErrorString(e);
    // The same kind of stream the in-process harness handed out: blocking, so that the legacy
    // stream's events bracket it.
    if (auto e = cudaStreamCreate(&stream); e != cudaSuccess) return cudaGetErrorString(e);
    if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) return "cudaEventCreate";
    // Everything the runtime starts lazily (its threads, the memset kernel's module) starts now,
    // so that the judge's count of this process's threads is the runtime's before the candidate.
    if (cudaMalloc(&scratch, 256) != cudaSuccess || cudaMemsetAsync(scratch, 0, 256, stream) != cudaSuccess ||
        !launch_empty_kernel(stream) || cudaDeviceSynchronize() != cudaSuccess)
      return "warming the CUDA runtime failed";
    return {};
#else
    return cuda ? "this runner was built without CUDA" : "";
#endif
  }
  /// The empty exchange's stand-in for a call: an empty kernel on the candidate's stream, so
  /// that the judge's calibration pays what a call pays for launching into this process's
  /// context (on a time-sliced GPU, a context switch) and nothing more (empty_kernel.cu).
  void touch(std::uint64_t spin_ns) {
#ifdef KBLASTER_RUNNER_CUDA
    if (cuda) launch_empty_kernel(stream, spin_ns);
#else
    (void)spin_ns;
#endif
  }
  void* candidate_stream() const {
#ifdef KBLASTER_RUNNER_CUDA
    return stream;
#else
    return nullptr;
#endif
  }
  void timer_start() {
    host_start = std::chrono::steady_clock::now();
#ifdef KBLASTER_RUNNER_CUDA
    if (cuda) cudaEventRecord(start, cudaStreamLegacy);
#endif
  }
  /// Ends the timed region after the whole device is done; fills r's event time and error.
  void timer_stop(reply& r) {
    r.event_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();
#ifdef KBLASTER_RUNNER_CUDA
    if (!cuda) return;
    cudaEventRecord(stop, cudaStreamLegacy);
    cudaError_t e = cudaEventSynchronize(stop);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
    r.event_ms = ms;
    if (e == cudaSuccess) e = cudaGetLastError();
    note_error(r, e);
#endif
  }
  /// The candidate's own stream is done (two-phase calls, first half).
  void sync_stream(reply& r) {
#ifdef KBLASTER_RUNNER_CUDA
    if (cuda) note_error(r, cudaStreamSynchronize(stream));
#else
    (void)r;
#endif
  }
  void sync_device(reply& r) {
#ifdef KBLASTER_RUNNER_CUDA
    if (!cuda) return;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    note_error(r, e);
#else
    (void)r;
#endif
  }
#ifdef KBLASTER_RUNNER_CUDA
  static void note_error(reply& r, cudaError_t e) {
    if (e == cudaSuccess || r.result != status::ok) return;
    r.result = status::cuda_error;
    r.fatal = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
              e == cudaErrorIllegalInstruction || e == cudaErrorHardwareStackError || e == cudaErrorAssert ||
              e == cudaErrorInvalidPc || e == cudaErrorLaunchTimeout;
    std::snprintf(r.message, sizeof(r.message), "%s", cudaGetErrorString(e));
  }
#endif
};

// The shared arena, as this process sees it: the judge's allocation imported from the file
// descriptor that came with the map request (shared_arena.cpp says why not a legacy IPC handle),
// or its memfd mapped (CPU).
struct arena {
  char* base = nullptr;
  std::uint64_t bytes = 0;
  bool cuda = false;
#ifdef KBLASTER_RUNNER_CUDA
  CUmemGenericAllocationHandle allocation = 0;
  bool imported = false, mapped = false;
#endif
  void release() {
#ifdef KBLASTER_RUNNER_CUDA
    if (cuda) {
      const auto va = reinterpret_cast<CUdeviceptr>(base);
      if (mapped) cuMemUnmap(va, bytes);
      if (base) cuMemAddressFree(va, bytes);
      if (imported) cuMemRelease(allocation);
      imported = mapped = false;
      base = nullptr;
      return;
    }
#endif
    if (base) ::munmap(base, bytes);
    base = nullptr;
  }
  std::string map(const request_header& h, int fd, bool on_cuda) {
    release();
    cuda = on_cuda;
    bytes = h.arena_bytes;
    if (fd < 0) return "no arena file descriptor came with the map request";
#ifdef KBLASTER_RUNNER_CUDA
    if (cuda) {
      const auto fail = [&](CUresult r, const char* what) {
        const char* name = nullptr;
        cuGetErrorString(r, &name);
        release();
        return std::string(what) + ": " + (name ? name : "unknown error");
      };
      CUresult r = cuMemImportFromShareableHandle(&allocation, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      ::close(fd);
      if (r != CUDA_SUCCESS) return fail(r, "importing the judge's memory");
      imported = true;
      CUdeviceptr va = 0;
      if ((r = cuMemAddressReserve(&va, bytes, 0, 0, 0)) != CUDA_SUCCESS) return fail(r, "reserving addresses");
      base = reinterpret_cast<char*>(va);
      if ((r = cuMemMap(va, bytes, 0, allocation, 0)) != CUDA_SUCCESS) return fail(r, "mapping the judge's memory");
      mapped = true;
      int ordinal = 0;
      cudaGetDevice(&ordinal);
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = ordinal;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if ((r = cuMemSetAccess(va, bytes, &access, 1)) != CUDA_SUCCESS) return fail(r, "cuMemSetAccess");
      return {};
    }
#endif
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    base = static_cast<char*>(p);
    return {};
  }
};

// DLTensors over the arena, with copies of what they said, to tell whether kb_forward changed them.
struct views {
  std::vector<DLTensor> tensors, original;
  std::vector<std::int64_t> dims, dims_copy;
  std::string build(const std::vector<tensor_desc>& descs, const arena& a, bool cuda) {
    tensors.assign(descs.size(), DLTensor{});
    dims.assign(descs.size() * 2 * max_dims, 0);
    for (std::size_t i = 0; i < descs.size(); ++i) {
      const auto& d = descs[i];
      if (d.ndim < 0 || d.ndim > max_dims) return "descriptor with " + std::to_string(d.ndim) + " dimensions";
      if (d.offset > a.bytes) return "descriptor outside the arena";
      auto* shape = &dims[i * 2 * max_dims];
      auto* strides = shape + max_dims;
      std::copy(d.shape, d.shape + max_dims, shape);
      std::copy(d.strides, d.strides + max_dims, strides);
      DLTensor& t = tensors[i];
      t.data = a.base + d.offset;
      t.device = cuda ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
      t.ndim = d.ndim;
      t.dtype = DLDataType{d.code, d.bits, d.lanes};
      t.shape = shape;
      t.strides = strides;
      t.byte_offset = 0;
    }
    original = tensors;
    dims_copy = dims;
    return {};
  }
  int changed() const {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto &a = tensors[i], &b = original[i];
      if (a.data != b.data || a.ndim != b.ndim || a.shape != b.shape || a.strides != b.strides ||
          a.byte_offset != b.byte_offset || a.dtype.code != b.dtype.code || a.dtype.bits != b.dtype.bits)
        return static_cast<int>(i);
      if (!std::equal(dims.begin() + static_cast<long>(i * 2 * max_dims),
                      dims.begin() + static_cast<long>((i + 1) * 2 * max_dims),
                      dims_copy.begin() + static_cast<long>(i * 2 * max_dims)))
        return static_cast<int>(i);
    }
    return -1;
  }
};

// The profiled call's tensors: the runner's own device copies of the arena's (CUDA), so that
// what ncu replays touches only allocations of this process. On the CPU (a stand-in ncu in
// tests) the call is made on the arena itself. Freed when the call is done.
struct profile_copies {
  std::vector<void*> blocks;
  profile_copies() = default;
  profile_copies(const profile_copies&) = delete;
  profile_copies& operator=(const profile_copies&) = delete;
  ~profile_copies() {
#ifdef KBLASTER_RUNNER_CUDA
    for (void* p : blocks) cudaFree(p);
#endif
  }
  /// Points each tensor at a copy of the bytes it spans; empty on success, else why not.
  std::string make(std::vector<DLTensor>& tensors, bool cuda) {
#ifdef KBLASTER_RUNNER_CUDA
    if (!cuda) return {};
    for (auto& t : tensors) {
      // The elements a strided view reaches: the last one's offset plus one.
      std::int64_t span = 1;
      bool empty = false;
      for (int d = 0; d < t.ndim; ++d) {
        if (t.shape[d] <= 0) empty = true;
        else span += (t.shape[d] - 1) * (t.strides ? t.strides[d] : 1);
      }
      const std::size_t bytes = empty ? 1 : static_cast<std::size_t>(span) * ((t.dtype.bits * t.dtype.lanes + 7) / 8);
      void* p = nullptr;
      if (auto e = cudaMalloc(&p, bytes); e != cudaSuccess) return std::string("cudaMalloc for the profiled call: ") + cudaGetErrorString(e);
      blocks.push_back(p);
      if (!empty)
        if (auto e = cudaMemcpy(p, t.data, bytes, cudaMemcpyDeviceToDevice); e != cudaSuccess)
          return std::string("copying a tensor for the profiled call: ") + cudaGetErrorString(e);
      t.data = p;
    }
    if (auto e = cudaDeviceSynchronize(); e != cudaSuccess) return cudaGetErrorString(e);
#else
    (void)tensors;
    (void)cuda;
#endif
    return {};
  }
};

void range_push() {
#ifdef KBLASTER_RUNNER_CUDA
  nvtxRangePushA(profile_range);
#endif
}

void range_pop() {
#ifdef KBLASTER_RUNNER_CUDA
  nvtxRangePop();
#endif
}

/// Connects to the judge's listening socket at `path` (a runner started under ncu, which does
/// not pass the judge's socket down as fd 3). Returns the descriptor, or -1.
int connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// The runner's command line.
struct runner_args {
  bool want_cuda = false;
  long judge = -1;       // the judge's pid, when given: a runner whose parent is not it exits
  std::string connect;   // the judge's socket to connect to (under ncu), else fd `sock`
};

/// Reads the command line (a socket given by --fd goes into `sock`); nullopt after the usage.
std::optional<runner_args> parse_args(int argc, char** argv) {
  runner_args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) a.want_cuda = std::string(argv[++i]) == "cuda";
    else if (arg == "--fd" && i + 1 < argc) sock = std::atoi(argv[++i]);
    else if (arg == "--judge" && i + 1 < argc) a.judge = std::atol(argv[++i]);
    else if (arg == "--connect" && i + 1 < argc) a.connect = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: kblaster-runner --device cpu|cuda [--fd N | --connect SOCKET] [--judge PID] (started by "
                   "kblaster-harness)\n");
      return std::nullopt;
    }
  }
  return a;
}

/// What the runner holds between requests: its device, the candidate, the shared arena and the
/// views last built over it, with the payload they were built from (reused while it repeats).
struct runner_state {
  device dev;
  kb_forward_fn forward = nullptr;
  arena shared;
  struct built_views {
    std::vector<char> payload;
    std::vector<views> slots;
    bool valid = false;
  } built;
};

/// op::load: the candidate's library opened and its kb_forward found; one per runner.
void load_candidate(runner_state& st, const std::vector<char>& payload) {
  if (st.forward || payload.empty() || payload.size() > max_path) {
    send_reply(failure(status::bad_request, "one candidate per runner"));
    return;
  }
  const std::string path(payload.data(), strnlen(payload.data(), payload.size()));
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    send_reply(failure(status::load_failed, std::string("cannot load the candidate: ") + dlerror()));
    return;
  }
  st.forward = reinterpret_cast<kb_forward_fn>(dlsym(handle, "kb_forward"));
  send_reply(st.forward ? reply{} : failure(status::load_failed,
                                            "the candidate has no extern \"C\" kb_forward (see docs/harness.md, \"Candidate ABI\")"));
}

/// op::map: the judge's arena mapped (the views built over the last one are gone with it).
void map_memory(runner_state& st, const request_header& h, int fd) {
  st.built = {};  // views point into the arena they were built over
  const auto err = st.shared.map(h, fd, st.dev.cuda);
  send_reply(err.empty() ? reply{} : failure(status::map_failed, err));
}

/// The views of a batch of `calls` from its payload (slot 0's descriptors, then each tensor's
/// distance between slots). The views of a batch are built once and kept while the judge asks for
/// the same batch (its full and half batches, its empty exchanges): built per exchange, they cost
/// the judge's clock a few hundred nanoseconds a call outside the runner's events, 3-9 % of an
/// honest 8 us call on an H200. Empty, or what is wrong with the payload.
std::string build_views(runner_state& st, const std::vector<char>& payload, std::size_t per_call, std::size_t calls) {
  auto& built = st.built;
  if (built.valid && built.payload == payload && built.slots.size() >= calls) return {};
  std::vector<tensor_desc> first(per_call);
  std::vector<std::uint64_t> stride(per_call, 0);
  if (per_call) std::memcpy(first.data(), payload.data(), per_call * sizeof(tensor_desc));
  if (calls > 1) std::memcpy(stride.data(), payload.data() + per_call * sizeof(tensor_desc), per_call * sizeof(std::uint64_t));
  built = {};
  std::string bad;
  built.slots.resize(calls);
  for (std::size_t c = 0; c < calls && bad.empty(); ++c) {
    auto descs = first;
    for (std::size_t i = 0; i < per_call; ++i) {
      if (stride[i] > st.shared.bytes) bad = "a slot stride outside the arena";
      descs[i].offset += c * stride[i];  // bounded: calls <= 1024, stride <= the arena's bytes
    }
    if (bad.empty()) bad = built.slots[c].build(descs, st.shared, st.dev.cuda);
  }
  if (!bad.empty()) {
    built = {};
    return bad;
  }
  built.payload = payload;
  built.valid = true;
  return {};
}

/// kb_forward once per slot of the batch, until one fails: into `r`'s rc, result and calls_made.
void call_slots(runner_state& st, const request_header& h, std::size_t calls, reply& r) {
  for (std::size_t c = 0; c < calls; ++c) {
    auto& v = st.built.slots[c];
    try {
      r.rc = st.forward(v.tensors.data(), static_cast<int>(h.n_in), v.tensors.data() + h.n_in, static_cast<int>(h.n_out),
                        st.dev.candidate_stream());
    } catch (const std::bad_alloc& e) {
      r = failure(status::out_of_memory, std::string("kb_forward threw std::bad_alloc: ") + e.what());
    } catch (const std::exception& e) {
      r = failure(status::exception, std::string("kb_forward threw: ") + e.what());
    } catch (...) {
      r = failure(status::exception, "kb_forward threw a non-standard exception");
    }
    if (r.result != status::ok || r.rc != 0) break;
    ++r.calls_made;
  }
}

/// A two-phase call: the reply once the candidate's stream is done, then, at the judge's
/// op::finish, a second once the whole device is. False when the judge sent anything else.
bool finish_two_phase(runner_state& st, reply& r) {
  st.dev.sync_stream(r);
  send_reply(r);
  request_header fin;
  if (!read_exact(&fin, sizeof(fin)) || fin.magic != protocol_magic || fin.kind != op::finish) return false;
  const int made = r.calls_made;
  r = reply{};
  r.calls_made = made;
  st.dev.sync_device(r);
  return true;
}

/// op::call (a call, a batch of calls, or the profiled call) or op::noop (an empty exchange).
/// False when the runner must exit (the judge broke the two-phase protocol).
bool serve_call(runner_state& st, const request_header& h, const std::vector<char>& payload) {
  const std::size_t per_call = std::size_t{h.n_in} + h.n_out;
  const std::size_t calls = h.calls;
  const bool profiled = h.kind == op::call && (h.flags & flag_profile);
  // A batch is a plain timed call repeated: never two-phase or profiled.
  const bool batch_ok = calls >= 1 && calls <= max_batch_calls && (calls == 1 || h.flags == 0);
  const std::size_t want = per_call * (sizeof(tensor_desc) + (calls > 1 ? sizeof(std::uint64_t) : 0));
  if ((h.kind == op::call && !st.forward) || !st.shared.base || per_call > max_tensors || !batch_ok || payload.size() != want) {
    send_reply(failure(status::bad_request, "call before load and map, or a malformed descriptor list"));
    return true;
  }
  if (const auto bad = build_views(st, payload, per_call, calls); !bad.empty()) {
    send_reply(failure(status::bad_request, bad));
    return true;
  }
  auto& slots = st.built.slots;
  reply r;
  profile_copies copies;
  if (profiled) st.built.valid = false;  // its views are moved to the copies below
  if (profiled)
    if (const auto err = copies.make(slots[0].tensors, st.dev.cuda); !err.empty()) {
      send_reply(failure(status::cuda_error, err));
      return true;
    }
  st.dev.timer_start();
  if (h.kind == op::noop) st.dev.touch(h.spin_ns);
  if (profiled) range_push();
  if (h.kind == op::call) call_slots(st, h, calls, r);
  if (profiled) {
    st.dev.sync_device(r);  // the range holds the candidate's whole work
    range_pop();
  }
  if (h.flags & flag_two_phase) {
    if (!finish_two_phase(st, r)) return false;
  } else {
    st.dev.timer_stop(r);
  }
  r.descriptor_changed = -1;  // a profiled call ran on copies
  if (!profiled)
    for (std::size_t c = 0; c < calls && r.descriptor_changed < 0; ++c)
      if (const int i = slots[c].changed(); i >= 0) {
        r.descriptor_changed = static_cast<int>(c * per_call) + i;
        st.built.valid = false;  // rebuilt from the judge's descriptors next time
      }
  send_reply(r);
  return true;
}

/// The judge's requests, one at a time, until it quits or goes: the exit status.
int serve(runner_state& st) {
  for (;;) {
    request_header h;
    int fd = -1;
    if (!read_exact(&h, sizeof(h), &fd) || h.magic != protocol_magic) return 0;  // the judge is gone
    std::vector<char> payload(h.payload_bytes);
    if (h.payload_bytes > (sizeof(tensor_desc) + sizeof(std::uint64_t)) * max_tensors + max_path || !read_exact(payload.data(), payload.size()))
      return 1;
    switch (h.kind) {
      case op::quit: return 0;
      case op::load: load_candidate(st, payload); break;
      case op::map: map_memory(st, h, fd); break;
      case op::noop:
      case op::call:
        if (!serve_call(st, h, payload)) return 1;
        break;
      default: send_reply(failure(status::bad_request, "unknown request")); break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = parse_args(argc, argv);
  if (!args) return 2;
  // Dies with its parent (the judge, or the ncu the judge started it under); if the judge is
  // already gone, at once.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (args->judge > 0 && ::getppid() != args->judge) return 1;
  if (!args->connect.empty() && (sock = connect_to(args->connect)) < 0) {
    std::fprintf(stderr, "kblaster-runner: cannot connect to %s: %s\n", args->connect.c_str(), std::strerror(errno));
    return 1;
  }
  runner_state st;
  if (const auto err = st.dev.init(args->want_cuda); !err.empty()) {
    send_reply(failure(status::cuda_error, "runner start-up: " + err));
    return 1;
  }
  const auto filter = install_seccomp_filter();
  send_reply(failure(status::ok, filter.empty() ? "seccomp filter active" : "no seccomp filter: " + filter));
  return serve(st);
}
