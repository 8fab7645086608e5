// libkblaster_timeline.so: the program's GPU timeline, collected with CUPTI's activity API.
//
// Loaded into the user's program by the CUDA driver itself (CUDA_INJECTION64_PATH names this
// library; the driver calls InitializeInjection once, at cuInit), so it works on programs linked
// with the static cudart that the capture agent's LD_PRELOAD cannot see. It records every
// kernel, memcpy and memset the GPU ran and appends one JSON object per line to the file named
// by $KBLASTER_TIMELINE_OUT (engine/profile/program_timeline.h reads it):
//   {"kind":"header","collector":"kblaster_timeline","version":1}
//   {"kind":"kernel","mangled":…,"name":…,"start":ns,"end":ns,"device":…,"context":…,"stream":…,
//    "correlation":…,"grid":[x,y,z],"block":[x,y,z],"registers":…,"shared_bytes":…}
//   {"kind":"memcpy","copy":"HtoD","bytes":…,"start":…,"end":…,"device":…,"context":…,"stream":…,"correlation":…}
//   {"kind":"memset","bytes":…, …}
//   {"kind":"end","dropped":N}   (only when the program exits through exit(): its absence says so)
// Lines are appended as CUPTI hands buffers back, so a program that crashes still leaves what
// was delivered. Includes nothing of the project and links nothing of it: CUPTI and libc only.
#include <cupti.h>

#include <cxxabi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

constexpr std::size_t buffer_bytes = 8u << 20;  // per buffer: few hand-backs for a long run
constexpr std::size_t record_alignment = 8;     // CUPTI's ACTIVITY_RECORD_ALIGNMENT

// The output file and what is written to it. One mutex: CUPTI may complete buffers on its own
// thread while the program's thread flushes at exit.
struct collector_state {
  std::mutex mutex;
  std::FILE* out = nullptr;
  std::map<std::string, std::string> demangled;  // by mangled name: each name demangled once
  bool finished = false;
};

collector_state& state() {
  static auto* s = new collector_state;  // never destroyed: atexit handlers may run after statics die
  return *s;
}

std::string json_string(const char* text) {
  std::string out = "\"";
  for (const char* p = text ? text : ""; *p; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Caller holds the mutex.
const std::string& demangled_name(collector_state& s, const char* mangled) {
  const std::string key = mangled ? mangled : "";
  auto [at, inserted] = s.demangled.try_emplace(key, key);
  if (inserted && !key.empty()) {
    int status = 0;
    if (char* plain = abi::__cxa_demangle(key.c_str(), nullptr, nullptr, &status); plain && status == 0) {
      at->second = plain;
      std::free(plain);
    }
  }
  return at->second;
}

const char* copy_kind_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

// The record structs are those of the CUDA 13.0 headers. CUPTI only appends fields to a record
// in later versions, so a newer libcupti's records read correctly through these prefixes.
void write_kernel(collector_state& s, const CUpti_ActivityKernel10& k) {
  std::fprintf(s.out,
               "{\"kind\":\"kernel\",\"mangled\":%s,\"name\":%s,\"start\":%" PRIu64 ",\"end\":%" PRIu64
               ",\"device\":%u,\"context\":%u,\"stream\":%u,\"correlation\":%u,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],"
               "\"registers\":%u,\"shared_bytes\":%d}\n",
               json_string(k.name).c_str(), json_string(demangled_name(s, k.name).c_str()).c_str(), k.start, k.end,
               k.deviceId, k.contextId, k.streamId, k.correlationId, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY,
               k.blockZ, static_cast<unsigned>(k.registersPerThread), k.staticSharedMemory + k.dynamicSharedMemory);
}

void write_memcpy(collector_state& s, const CUpti_ActivityMemcpy6& m) {
  std::fprintf(s.out,
               "{\"kind\":\"memcpy\",\"copy\":\"%s\",\"bytes\":%" PRIu64 ",\"start\":%" PRIu64 ",\"end\":%" PRIu64
               ",\"device\":%u,\"context\":%u,\"stream\":%u,\"correlation\":%u}\n",
               copy_kind_name(m.copyKind), m.bytes, m.start, m.end, m.deviceId, m.contextId, m.streamId, m.correlationId);
}

void write_memset(collector_state& s, const CUpti_ActivityMemset4& m) {
  std::fprintf(s.out,
               "{\"kind\":\"memset\",\"bytes\":%" PRIu64 ",\"start\":%" PRIu64 ",\"end\":%" PRIu64
               ",\"device\":%u,\"context\":%u,\"stream\":%u,\"correlation\":%u}\n",
               m.bytes, m.start, m.end, m.deviceId, m.contextId, m.streamId, m.correlationId);
}

void write_record(collector_state& s, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      write_kernel(s, *reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: write_memcpy(s, *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: write_memset(s, *reinterpret_cast<const CUpti_ActivityMemset4*>(record)); break;
    default: break;
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  auto& s = state();
  {
    const std::lock_guard lock(s.mutex);
    if (s.out && !s.finished) {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) write_record(s, record);
      std::fflush(s.out);  // what was delivered survives a crash later on
    }
  }
  std::free(buffer);
}

std::uint64_t dropped_records() {
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  return dropped;
}

// At exit, and before cudaDeviceReset tears a context down with records still in its buffers.
void flush_records() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

void finish() {
  flush_records();
  const std::uint64_t dropped = dropped_records();
  auto& s = state();
  const std::lock_guard lock(s.mutex);
  if (!s.out || s.finished) return;
  std::fprintf(s.out, "{\"kind\":\"end\",\"dropped\":%" PRIu64 "}\n", dropped);
  std::fclose(s.out);
  s.out = nullptr;
  s.finished = true;
}

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && id == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 &&
      info->callbackSite == CUPTI_API_ENTER)
    flush_records();
}

void complain(const char* what, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "[kblaster timeline] %s failed: %s\n", what, text ? text : "unknown CUPTI error");
}

bool start_collecting() {
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    complain("cuptiActivityRegisterCallbacks", r);
    return false;
  }
  // CONCURRENT_KERNEL rather than KERNEL: the latter serialises every kernel, which would change
  // the very overlap the timeline is meant to show.
  for (const auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
    if (const CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
      complain("cuptiActivityEnable", r);
      return false;
    }
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, on_api_call, nullptr) == CUPTI_SUCCESS)  // the reset flush is a nicety: go on without it
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
  return true;
}

}  // namespace

/// Called by the CUDA driver once, when it loads this library from CUDA_INJECTION64_PATH.
/// Returns 1 on success; a failure leaves the program running untraced (the engine sees a file
/// with a header and no end, or none, and says so).
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  static std::once_flag once;
  static int result = 0;
  std::call_once(once, [] {
    const char* path = std::getenv("KBLASTER_TIMELINE_OUT");
    if (!path || !*path) {
      std::fprintf(stderr, "[kblaster timeline] KBLASTER_TIMELINE_OUT is not set: nothing is collected\n");
      return;
    }
    auto& s = state();
    s.out = std::fopen(path, "w");
    if (!s.out) {
      std::fprintf(stderr, "[kblaster timeline] cannot write %s: %s\n", path, std::strerror(errno));
      return;
    }
    std::fprintf(s.out, "{\"kind\":\"header\",\"collector\":\"kblaster_timeline\",\"version\":1}\n");
    std::fflush(s.out);
    if (!start_collecting()) return;
    std::atexit(finish);
    result = 1;
  });
  return result;
}
