// Inputs beyond the task's declared distribution: kernels that are right only for benign values
// (an exp without the max subtracted, a sum in half precision, a variance as E[x²] − E[x]²) pass
// every seed drawn from it. Each verification also runs
//   large_magnitude: the random floating-point inputs scaled up (×1000; ×100 in 16-bit types);
//   near_limits:     scaled towards the dtype's largest value, as far as the reference stays finite
//                    with headroom (max^(1/4), else max^(1/8)).
// Inputs drawn from a fixed file, integer inputs and the module's parameters stay as they are. A
// task can declare a set out of its domain (task.json "stress"), and it is skipped with the reason.
// The outputs are judged by compare_stressed (compare.h): element-wise tolerances are written for
// the task's own scale, and summing large terms in another order legitimately moves results by
// more than atol; what the stress sets catch is overflow, NaN and answers wrong as a whole.
#pragma once

#include "engine/task/task.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kblaster::harness {

struct stress_set {
  std::string kind;
  double scale = 1;  // large_magnitude: the factor; near_limits: the largest |input| (of the first scaled input)
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> expected;    // the reference's outputs on them
  std::string skipped;                    // why this set does not run (empty: it runs)
};

using reference_fn = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

/// The stress set `kind` (one of engine::stress_kinds()) made from `base` (inputs drawn from the
/// task's distribution), with the reference's outputs.
stress_set make_stress_set(const engine::task_spec& task, const std::string& kind, const std::vector<torch::Tensor>& base,
                           const reference_fn& reference);

}  // namespace kblaster::harness
