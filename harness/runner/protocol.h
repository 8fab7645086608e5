// The judge–runner protocol: fixed-layout messages over a Unix stream socket between
// kblaster-harness (the judge: protocol with the engine, reference, expected outputs, verdict)
// and kblaster-runner (loads one candidate and calls it on memory the judge shares with it).
//
// Why fixed layouts rather than JSON: the runner is candidate-controlled once a candidate is
// loaded, so everything the judge reads from it is hostile input. A reply is one struct of known
// size whose every field the judge range-checks; there is nothing to parse.
// Shared by both programs; includes nothing of LibTorch or CUDA.
#pragma once

#include <cstdint>

namespace kblaster::harness::runner {

constexpr std::uint32_t protocol_magic = 0x4b42524eu;  // "KBRN"
constexpr int max_dims = 8;
constexpr int max_tensors = 4096;       // inputs, module parameters and outputs together, per call
// A batched call: `calls` calls back to back, each on its own slot of the arena (the judge's
// clock then pays one exchange per batch, not per call: harness/timed_batch.h).
constexpr int max_batch_calls = 1024;
constexpr int max_path = 4096;
constexpr int message_chars = 240;

enum class op : std::uint32_t {
  load = 1,    // payload: the candidate's path (already screened by the judge)
  map = 2,     // the shared arena: its file descriptor sent with SCM_RIGHTS (the CUDA allocation's, or a memfd)
  call = 3,    // payload: n_in + n_out tensor_desc, then with calls > 1 one std::uint64_t slot stride per
               // descriptor (call c's tensor i is at offset + c * stride[i]); flags below
  finish = 4,  // second half of a two-phase call: synchronise the whole device, then reply
  noop = 5,    // a call without the candidate: the cost of the round trip, for the judge's clock (same
               // payload and `calls` as the call it stands for: the same views are built and checked)
  quit = 6,
};

// call flags
constexpr std::uint32_t flag_two_phase = 1;  // reply once the candidate's stream is done, then wait for `finish`
// The profiled call (the runner started under ncu): made on the runner's own copies of the
// tensors (plain device allocations, what ncu's kernel replay saves and restores between its
// passes), inside the NVTX push/pop range `profile_range` that ncu is told to profile.
constexpr std::uint32_t flag_profile = 2;
constexpr const char* profile_range = "kb_candidate";

/// One DLTensor, with its data as an offset into the shared arena.
struct tensor_desc {
  std::uint64_t offset = 0;
  std::int64_t shape[max_dims] = {};
  std::int64_t strides[max_dims] = {};
  std::int32_t ndim = 0;
  std::uint8_t code = 0, bits = 0;  // DLDataTypeCode, bits
  std::uint16_t lanes = 1;
};

struct request_header {
  std::uint32_t magic = protocol_magic;
  op kind = op::noop;
  std::uint32_t n_in = 0, n_out = 0;
  std::uint32_t flags = 0;
  std::uint32_t payload_bytes = 0;  // what follows the header
  std::uint32_t calls = 1;          // call, noop: how many calls back to back, each on its own slot
  std::uint32_t pad = 0;
  std::uint64_t spin_ns = 0;        // noop: how long its stand-in kernel holds the GPU (a batch's time)
  std::uint64_t arena_bytes = 0;    // map
};

enum class status : std::uint32_t {
  ok = 0,
  load_failed = 1,     // message says why (dlopen, no kb_forward)
  bad_request = 2,     // the judge sent something the runner cannot use (a bug)
  exception = 3,       // kb_forward threw
  out_of_memory = 4,   // kb_forward threw std::bad_alloc
  cuda_error = 5,      // a CUDA error after the call; `fatal` says whether the context is lost
  map_failed = 6,
};

struct reply {
  std::uint32_t magic = protocol_magic;
  status result = status::ok;
  std::int32_t rc = 0;                 // kb_forward's return value
  std::int32_t fatal = 0;              // the CUDA context is unusable (illegal address...)
  std::int32_t descriptor_changed = -1;  // index of a descriptor kb_forward changed (over the batch), or -1
  std::int32_t calls_made = 0;         // calls of a batch made (fewer when one failed)
  double event_ms = 0;                 // CUDA-event time of the call(s) on the legacy stream (CPU: host clock)
  char message[message_chars] = {};
};

}  // namespace kblaster::harness::runner
