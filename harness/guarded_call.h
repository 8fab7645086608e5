// One call of a candidate's kb_forward under every guard that a single call can check: outputs
// poisoned with NaN and followed by canaries, output memory distinct from inputs and from the
// reference's outputs, descriptors and inputs checked unchanged, and work still running after
// the call returned (another stream or thread) detected.
#pragma once

#include "harness/candidate.h"
#include "harness/device.h"
#include "harness/tensors.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace kblaster::harness {

/// What one guarded call found. `check` is empty when every guard passed.
struct call_result {
  std::string check;   // the guard that failed: return_code, side_work, descriptor_changed, canary, input_modified, aliasing
  std::string reason;  // a sentence for the user
  std::vector<torch::Tensor> outputs;
};

/// Calls `fn` on `args` (inputs then parameters) with fresh outputs shaped like `reference_outputs`.
/// `side_work_wait_ms`: how long to wait on the CPU before looking for late writes.
call_result guarded_call(device_context& dev, kb_forward_fn fn, const std::vector<torch::Tensor>& args,
                         const std::vector<torch::Tensor>& reference_outputs, int side_work_wait_ms = 20);

}  // namespace kblaster::harness
