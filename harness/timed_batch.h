// The memory of a timed batch: `slots` copies of one call's arguments and outputs in one shared
// arena, each tensor's copies side by side (a block [slots, ...]), so that before each batch the
// judge draws fresh inputs for every slot, poisons every output and checks every canary in one
// operation per tensor, and the runner makes the batch's calls back to back, one per slot.
//
// Why batches: the judge's own clock around an exchange with the runner costs a context switch
// of the time-sliced GPU (about 0.3 ms on an H200) and scatters by tens of microseconds; over
// enough calls per exchange that cost is paid once, and the judge's figure per call is good to a
// few percent at 5 us, which its one-call exchanges were not (below 40 us they checked nothing).
// Why fresh inputs per slot: a call whose inputs were seen before (or rotated, for a reduction,
// a histogram or a sort) has an answer the candidate could remember; a fresh draw has none.
#pragma once

#include "engine/task/task.h"
#include "harness/device.h"
#include "harness/runner/protocol.h"
#include "harness/shared_arena.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kblaster::harness {

/// How each argument of a timed call is renewed between batches.
enum class renewal {
  drawn,      ///< drawn afresh from its init (randn, uniform, randint)
  perturbed,  ///< a floating-point input read from a file (a capture's memory), each element
              ///< multiplied by its own 1 + u, |u| < 2^-6: the data keeps its structure
  kept,       ///< the same every time (integers from a file: indices, a structure; zeros, ones,
              ///< arange; the module's parameters)
};

class timed_batch {
 public:
  /// Room for `slots` calls on arguments shaped like `args` (the task's inputs, then the
  /// reference's parameters) and outputs like `like_outputs`.
  timed_batch(const device_context& dev, const engine::task_spec& task, const std::vector<torch::Tensor>& args,
              const std::vector<torch::Tensor>& like_outputs, int slots);

  /// Bytes one slot takes: its arena share and the judge's copy of its inputs.
  static std::size_t slot_bytes(const std::vector<torch::Tensor>& args, const std::vector<torch::Tensor>& like_outputs);

  int slots() const { return slots_; }
  int n_in() const { return static_cast<int>(args_.size()); }
  int n_out() const { return static_cast<int>(outputs_.size()); }
  const shared_arena& arena() const { return *arena_; }
  /// Slot 0's descriptors and each tensor's distance between slots (runner::op::call's payload).
  const std::vector<runner::tensor_desc>& first() const { return first_; }
  const std::vector<std::uint64_t>& strides() const { return strides_; }
  /// How argument i is renewed.
  renewal renewal_of(int i) const { return renew_[static_cast<std::size_t>(i)]; }

  /// Renews the arguments of slots [0, k) from `seed` and poisons their outputs (or fills them
  /// from their initial input); the judge keeps its own copy of what it put in.
  void refresh(std::uint64_t seed, int k);
  /// The judge's own copy of slot s's arguments (inputs, then parameters), as last refreshed.
  std::vector<torch::Tensor> args(int s) const;
  /// Slot s's arguments and outputs in the arena, as the candidate left them.
  std::vector<torch::Tensor> arena_args(int s) const;
  std::vector<torch::Tensor> outputs(int s) const;
  /// Index of the first output whose canary in some slot of [0, k) was overwritten, or -1.
  int damaged_canary(int k) const;

 private:
  struct block {
    std::size_t offset = 0;   // of slot 0 in the arena
    std::size_t stride = 0;   // bytes from one slot to the next
    std::int64_t elements = 0;
    std::int64_t canary = 0;  // outputs: elements of canary after the output
    std::vector<std::int64_t> shape;
    torch::ScalarType type = torch::kFloat32;
  };
  int slots_ = 0;
  torch::Device device_;
  std::vector<block> args_, outputs_;
  std::vector<renewal> renew_;
  std::vector<engine::input_spec> specs_;  // the task's inputs (the parameters have none)
  std::vector<int> initial_from_;
  std::vector<torch::Tensor> base_;        // argument values as first given (perturbed and kept ones start here)
  std::vector<torch::Tensor> judge_;       // [slots, elements] per argument: what the judge put in
  std::unique_ptr<shared_arena> arena_;
  std::vector<runner::tensor_desc> first_;
  std::vector<std::uint64_t> strides_;

  torch::Tensor arena_block(const block& b, std::int64_t width) const;  // [slots, width] over the arena
};

/// Slots for a batch of calls on these tensors within the judge's memory budget for timing
/// (timing_rules: a quarter of the device's free memory, at most 12 GiB; on the CPU 256 MiB), at most
/// runner::max_batch_calls, at least 1.
int slots_that_fit(const device_context& dev, const std::vector<torch::Tensor>& args,
                   const std::vector<torch::Tensor>& like_outputs);

/// Calls per batch for a call of about `call_ms`: the smallest power of two that makes the batch
/// take `batch_ms`, never more than `slots`.
int calls_per_batch(double call_ms, double batch_ms, int slots);

}  // namespace kblaster::harness
