// The shape a large task is profiled at. ncu replays the profiled kernel once per pass (36 with
// the sections kblaster reads) and saves and restores the memory it writes between passes: at
// KernelBench's sizes one profile took 7 s (6.4 GB element-wise tensors) to a minute (a naive
// GEMM of 1-2 s a call). A task whose tensors share a leading (batch) dimension is profiled at a
// fraction of it instead, so that one pass is short; the verdict and the timing stay at the
// task's own shape. The state is read from the smaller run, which the profile says.
#pragma once

#include "engine/task/task.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kblaster::engine::optimize {

/// When a profile is taken at a smaller batch, and how small it may get.
struct profile_shape_limits {
  double pass_ms = 25;                 ///< one replayed call, estimated from the timed median
  double max_bytes = 1024.0 * 1024 * 1024;  ///< the tensors ncu saves and restores each pass
  /// Never fewer elements than this in the largest tensor: eight full waves of 2048 threads on a
  /// 132-SM GPU at one element a thread, so that what the profile sees of the grid and the tail
  /// is still what the full shape does.
  std::int64_t min_elements = std::int64_t{2} << 20;
  /// Cut for its bytes alone, a task keeps at least this much (twice the largest L2, 60 MB on an
  /// H200), so that its DRAM traffic is still DRAM traffic. A slow call is cut for its time down
  /// to the element floor: there the weights the reference holds (a GEMM's, not counted here)
  /// and the work per element are what the kernel's time is made of.
  double min_bytes = 128.0 * 1024 * 1024;
};

/// A task reduced along its leading dimension for the profile.
struct profile_shape {
  task_spec task;              ///< the same task, every tensor's leading dimension `batch`
  std::int64_t full_batch = 0;
  std::int64_t batch = 0;
  std::string note;            ///< what the profile says of its shape
};

/// The reduced shape for profiling `task`, or nullopt when it is profiled as it is: it is small
/// enough, its tensors do not share a leading dimension (a matmul's A and B), an input is read
/// from a file, or halving would go under `limits.min_elements`. `runtime_ms` is the candidate's
/// timed median (nullopt: only the bytes decide). Halves the batch until both limits hold.
std::optional<profile_shape> reduced_profile_shape(const task_spec& task, std::optional<double> runtime_ms,
                                                   const profile_shape_limits& limits = {});

}  // namespace kblaster::engine::optimize
