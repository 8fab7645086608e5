// Which kernels of a program to optimize, in which order, and what the program could gain at
// best: from the program's profile (every kernel's GPU time over its launches and its headroom),
// each kernel is worth the GPU time it could give back at speed of light, and the Amdahl bound
// says what the program's GPU span becomes if every planned kernel got there. Shown before
// anything runs, so that nobody spends an Optimize on a kernel that is 7 % of the program.
#pragma once

#include "engine/profile/program_profile.h"

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {

struct planned_kernel {
  std::string function;
  double share_pct = 0;  ///< of the program's kernel time
  double total_us = 0;
  long launches = 0;
  std::optional<double> headroom;  ///< absent when ncu did not see it
  /// The GPU time it could give back at speed of light: total * (1 - 1/headroom); without a
  /// headroom, its whole time (the bound cannot be tighter than that).
  double bound_saving_us = 0;
};

struct plan_policy {
  double min_share_pct = 5;     ///< kernels with less of the GPU time are left out
  std::size_t max_kernels = 3;
};

struct program_plan {
  std::vector<planned_kernel> kernels;  ///< the order to optimize them in: the largest saving first
  std::vector<std::string> left_out;    ///< one line per kernel not planned, with why
  double gpu_span_us = 0;               ///< the program's GPU span (first activity to last)
  /// span / (span - the planned kernels' savings): the GPU span's speedup if every planned kernel
  /// reached speed of light. The program's wall time gains less (host work, start-up).
  double amdahl_bound = 1;
};

/// Ranks the profile's kernels by the GPU time they could give back.
program_plan plan_program(const program_profile& profile, const plan_policy& policy = {});

/// The plan as the CLI prints it before anything runs:
///   plan: relu_rowsum (93% of GPU time, headroom ~8x, up to 183 us back), then scale_bias (...)
///   Amdahl bound: the program's GPU span at most 4.1x faster (if both reached speed of light)
std::string plan_text(const program_plan& plan);

/// Splits a candidates budget between the planned kernels in proportion to what they can give
/// back, at least one each; 0 (no budget) gives 0 to each (each runs with the loop's own limits).
std::vector<int> split_budget(int candidates, const program_plan& plan);

}  // namespace kblaster::engine
