// The program's profile from its timeline: every kernel aggregated over its launches (launches,
// total and mean GPU time, share of the program's kernel time, headroom once ncu has seen it), and
// the program's GPU busy and idle time. Which kernels are worth ncu's time, and the one ncu run
// that profiles one launch of each.
#pragma once

#include "engine/profile/program_timeline.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {

/// One kernel over all its launches.
struct kernel_time {
  std::string function;  // short name ("relu_rowsum"): what the editor and ncu's views name
  std::string name;      // demangled, of its first launch
  std::string mangled;   // of its first launch
  long launches = 0;
  double total_us = 0, mean_us = 0;
  double share_pct = 0;  // of the time every kernel of the program ran (the shares sum to 100)
  /// How far from speed of light ncu saw its profiled launch: 100 / the busier of its SM and
  /// memory throughput (% of peak), e.g. 8 for a kernel at 12.5 %. Absent when it was not
  /// profiled (too small a share to be worth ncu's time, or no ncu).
  std::optional<double> headroom;
};

/// The program's GPU as a whole, from the first span's start to the last one's end.
struct gpu_activity {
  double span_us = 0;  // first start to last end
  double busy_us = 0;  // the union of every kernel, memcpy and memset span (overlaps counted once)
  double idle_us = 0;  // span - busy
  double kernel_us = 0, memcpy_us = 0, memset_us = 0;  // sums, overlaps counted twice
  long memcpys = 0, memsets = 0;
  double idle_pct() const { return span_us > 0 ? 100 * idle_us / span_us : 0; }
};

struct program_profile {
  std::vector<kernel_time> kernels;  // by total time, largest first
  gpu_activity gpu;
  std::vector<std::string> warnings;  // the timeline's (timeline_warnings) and the profile's own
  std::string source;  // where the timeline came from: "CUPTI timeline of 1 run", "recorded: FILE"

  /// The kernel named `function` (short or demangled), or nullptr.
  const kernel_time* kernel(const std::string& function) const;
};

/// Aggregates a timeline: kernels by mangled name (two instantiations of a template are two
/// kernels), busy time as the union of spans across streams and devices.
program_profile aggregate_timeline(const program_timeline& timeline);

/// The busiest of SM and memory throughput as headroom: 100 / max(compute, memory) %, or nullopt
/// when neither is known or both are 0.
std::optional<double> headroom_of(std::optional<double> compute_pct, std::optional<double> memory_pct);

/// Which kernels are worth ncu's time: those with at least `min_share_pct` of the kernel time,
/// largest first, at most `max_kernels`; the largest always (a program with one kernel, or many
/// equal ones, still gets one).
struct worth_profiling_policy {
  double min_share_pct = 5;
  std::size_t max_kernels = 3;
};
std::vector<const kernel_time*> kernels_worth_profiling(const program_profile& profile,
                                                        const worth_profiling_policy& policy = {});

/// The ncu runs that profile one launch of each chosen kernel: one run matching all of them by
/// mangled name (`--kernel-name-base mangled`) whose launch count reaches the first launch of each
/// (the timeline knows the order the host made them in), or, where that would profile too many
/// launches (a kernel first launched after a loop of others), one run per kernel with a count of 1.
struct ncu_pass {
  std::string mangled_regex;  // "^(_Z11relu_rowsumPKfPfi|_Z10scale_biasPffi)$"
  int launch_count = 1;
  std::vector<std::string> functions;  // the kernels it profiles, for the progress line
};
std::vector<ncu_pass> plan_ncu_passes(const program_timeline& timeline, const std::vector<const kernel_time*>& chosen,
                                      int max_wasted_launches = 4);

/// The table `kblaster profile` prints first:
///   kernel        launches     total      mean   share  headroom
///   relu_rowsum          1  208.6 us  208.6 us   93.4%      ~8x
///   program: GPU busy 0.22 ms, idle 0.05 ms (18%) over 0.27 ms
std::string program_table_text(const program_profile& profile);

/// "93% of GPU time · 1 launch · 209 us · headroom ~8x": a kernel's line in the editor.
std::string kernel_time_line(const kernel_time& k);

/// "program: GPU busy 0.22 ms, idle 0.05 ms · 2 kernels": the program's line in the editor.
std::string program_line(const program_profile& profile);

/// "208.6 us", "1.24 ms", "3.10 s": a duration in the unit that reads best.
std::string duration_text(double us);

nlohmann::json to_json(const program_profile& profile);

}  // namespace kblaster::engine
