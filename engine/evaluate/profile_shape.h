// The shape a slow task is profiled at. ncu replays the profiled kernel once per pass (36 with
// the sections kblaster reads), so a call of a second makes a profile of a minute or more: level
// 2's naive GEMMs (1.1-2.1 s a call) took 35-80 s at KernelBench's shapes on an H200, and
// 40_Matmul's ran past a 120 s limit and left its version without a state. A task whose tensors
// share a leading (batch) dimension is profiled at a fraction of it instead, so that one call is
// short; the verdict and the timing stay at the task's own shape, and the profile says so.
//
// Only a slow call is cut, never a large but fast one. Cut to 1/16 for their bytes (6.4 GB
// tensors, 2-11 ms a call), level 1 problems saved about 2 s a profile (19_ReLU 4.7 s instead of
// 6.3-6.9 s, the same state either way) but the reductions 47 and 49, whose grid is their
// output's size, came out undersized_grid_uncoalesced instead of uncoalesced_global_memory.
// Cut for their time, the five GEMMs kept their state (uncoalesced_global_memory) and saved
// 25-70 s a profile (H200, 2026-11-26, docs/results/gpu-cost.md).
#pragma once

#include "engine/task/task.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kblaster::engine::optimize {

/// When a profile is taken at a smaller batch, and how small it may get.
struct profile_shape_limits {
  double pass_ms = 25;  ///< one replayed call, estimated from the timed median
  /// Never fewer elements than this in the largest output (the largest input where the task
  /// declares none), the work a grid is usually sized by: eight full waves of 2048 threads on a
  /// 132-SM GPU at one element a thread, so that the profile still sees the full shape's grid.
  std::int64_t min_elements = std::int64_t{2} << 20;
};

/// A task reduced along its leading dimension for the profile.
struct profile_shape {
  task_spec task;              ///< the same task, every tensor's leading dimension `batch`
  std::int64_t full_batch = 0;
  std::int64_t batch = 0;
  std::string note;            ///< what the profile says of its shape
};

/// The reduced shape for profiling `task`, or nullopt when it is profiled as it is: its call
/// (`runtime_ms`, the candidate's timed median; nullopt: not timed) is short enough, its tensors
/// do not share a leading dimension (a matmul's A and B), an input is read from a file, or
/// halving would go under `limits.min_elements`. Halves the batch until a call is estimated
/// under `limits.pass_ms`.
std::optional<profile_shape> reduced_profile_shape(const task_spec& task, std::optional<double> runtime_ms,
                                                   const profile_shape_limits& limits = {});

}  // namespace kblaster::engine::optimize
