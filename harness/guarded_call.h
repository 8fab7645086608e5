// One call of a candidate's kb_forward, made by its runner process, under every guard that a
// single call can check, all checked by the judge on memory it shares with the runner: outputs
// poisoned with NaN and followed by canaries, inputs compared with the judge's own copies, work
// still landing after the call returned (another stream or thread) and threads left running in
// the runner (counted from /proc), descriptors unchanged.
#pragma once

#include "harness/device.h"
#include "harness/runner_process.h"
#include "harness/shared_arena.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace kblaster::harness {

/// What one guarded call found. `check` is empty when every guard passed.
struct call_result {
  // The guard that failed: return_code, side_work, descriptor_changed, canary, input_modified,
  // exception, or, when the runner did not survive the call (runner_lost), crash, abort, hang,
  // out_of_memory, cuda_fatal.
  std::string check;
  std::string reason;  // a sentence for the user
  bool runner_lost = false;
  std::vector<torch::Tensor> outputs;  // the judge's own copies (host memory when large)
};

/// The runner's failure to reply, as a call_result.
call_result lost_call(const runner_reply& r, const std::string& during);

/// What a candidate's runner said in its reply, as a reason may quote it: the runner shares its
/// process with the candidate, which can write any message there (support/untrusted_text.h).
std::string runner_message(const runner::reply& b);

/// A reply that came back but reports a failure inside the runner (`when`: "in kb_forward"...).
call_result status_failure(const runner::reply& b, const std::string& when);

/// Calls the candidate in `runner` on copies of `args` (inputs then parameters) placed in `frame`.
/// `side_work_wait_ms`: on the CPU, how long to wait before looking for late writes.
call_result guarded_call(device_context& dev, runner_process& runner, call_frame& frame,
                         const std::vector<torch::Tensor>& args, runner_process::deadline until,
                         int side_work_wait_ms = 20);

}  // namespace kblaster::harness
