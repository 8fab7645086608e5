// The memory a candidate call sees, shared between the judge and the runner: one allocation
// (the CUDA virtual memory API's, exported as a file descriptor, on the GPU; a memfd on the CPU) holding copies of
// the call's arguments and its output buffers with their canaries. The reference's outputs, the
// pristine inputs and everything else the judge decides with stay in the judge's own memory.
#pragma once

#include "harness/device.h"
#include "harness/runner/protocol.h"
#include "harness/tensors.h"

#include <torch/torch.h>

#include <cstddef>
#include <vector>

namespace kblaster::harness {

// Every tensor starts on a 256-byte boundary, as cudaMalloc's own allocations do: a candidate's
// vectorised loads may rely on it, and did on the allocations of the in-process harness.
inline constexpr std::size_t arena_alignment = 256;
/// `n` rounded up to the arena's alignment.
std::size_t aligned(std::size_t n);

class shared_arena {
 public:
  shared_arena(const device_context& dev, std::size_t bytes);
  ~shared_arena();
  shared_arena(const shared_arena&) = delete;
  shared_arena& operator=(const shared_arena&) = delete;

  std::size_t bytes() const { return bytes_; }
  /// A tensor over [offset, offset + its bytes), contiguous, on the arena's device.
  torch::Tensor view(std::size_t offset, c10::IntArrayRef sizes, torch::ScalarType type) const;
  /// The descriptor to send to the runner: the memfd (CPU) or the exported allocation (GPU).
  int fd() const { return fd_; }

 private:
  void release();
  bool cuda_ = false;
  std::size_t bytes_ = 0;
  void* base_ = nullptr;
  int fd_ = -1;
  unsigned long long allocation_ = 0;  // CUmemGenericAllocationHandle
  bool created_ = false, mapped_ = false;
};

/// The arguments and outputs of one candidate call laid out in an arena, and the descriptors
/// the runner builds its DLTensors from.
class call_frame {
 public:
  /// Room for copies of `args` (inputs then parameters) and outputs shaped like `like_outputs`.
  /// `initial_from[j]`, where given and not -1, is the argument whose contents output j holds
  /// before each call (a captured kernel's in-place allocation) instead of the poison.
  call_frame(const device_context& dev, const std::vector<torch::Tensor>& args,
             const std::vector<torch::Tensor>& like_outputs, std::vector<int> initial_from = {});
  /// Copies `args` (shaped as at construction) into the arena's inputs and poisons the outputs
  /// (or fills them from their initial argument).
  void load(const std::vector<torch::Tensor>& args);
  const std::vector<torch::Tensor>& inputs() const { return inputs_; }
  output_buffers& outputs() { return outputs_; }
  const std::vector<runner::tensor_desc>& descriptors() const { return descs_; }
  int n_in() const { return static_cast<int>(inputs_.size()); }
  int n_out() const { return static_cast<int>(outputs_.outputs.size()); }
  const shared_arena& arena() const { return *arena_; }

 private:
  std::unique_ptr<shared_arena> arena_;
  std::vector<torch::Tensor> inputs_;
  output_buffers outputs_;
  std::vector<runner::tensor_desc> descs_;
  std::vector<int> initial_from_;
};

/// Where each output of `task` starts from (engine::input_spec::initial_from), for call_frame.
std::vector<int> initial_inputs(const engine::task_spec& task);

}  // namespace kblaster::harness
