// The performance signature of one kernel instance: the primary bottleneck, secondary
// characteristics each with the evidence that justifies it, and what could not be known.
#pragma once

#include "engine/profile/profile_report.h"

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {

/// Primary bottlenecks (snake_case names shared with the KB).
namespace primary {
inline constexpr const char* memory_bound_dram = "memory_bound_dram";
inline constexpr const char* memory_bound_l2 = "memory_bound_l2";
inline constexpr const char* memory_bound_l1 = "memory_bound_l1";
inline constexpr const char* compute_bound = "compute_bound";
inline constexpr const char* latency_bound = "latency_bound";
inline constexpr const char* small_grid = "small_grid";
inline constexpr const char* balanced = "balanced";
inline constexpr const char* memory_heavy = "memory_heavy";
inline constexpr const char* compute_heavy = "compute_heavy";
inline constexpr const char* unknown = "unknown";  // static profile only: needs a GPU run
}  // namespace primary

/// Secondary characteristics (snake_case names shared with the KB).
namespace secondary {
inline constexpr const char* uncoalesced_global_access = "uncoalesced_global_access";
inline constexpr const char* shared_memory_bank_conflicts = "shared_memory_bank_conflicts";
inline constexpr const char* warp_divergence = "warp_divergence";
inline constexpr const char* occupancy_limited_by_registers = "occupancy_limited_by_registers";
inline constexpr const char* occupancy_limited_by_shared_memory = "occupancy_limited_by_shared_memory";
inline constexpr const char* occupancy_limited_by_block_size = "occupancy_limited_by_block_size";
inline constexpr const char* register_spills = "register_spills";
inline constexpr const char* atomic_contention = "atomic_contention";
inline constexpr const char* launch_bound = "launch_bound";
inline constexpr const char* tensor_cores_unused = "tensor_cores_unused";
/// The SM side leads, but the kernel does no floating-point work to speak of: its issue slots go
/// to integer index arithmetic, division and modulo (on the XU) and memory instructions.
inline constexpr const char* integer_overhead = "integer_overhead";
}  // namespace secondary

/// One secondary characteristic and why it was assigned.
struct characteristic {
  std::string name;
  std::string evidence;  // metric values and rule figures, in words an engineer reads
  // The share of the time it costs (percent): ncu's estimate where a rule gave one, or the
  // classifier's own where it has a better figure (the idle lanes of a warp-divergent kernel whose
  // SM issue is the limit; the FFMA share of a matrix product that leaves its tensor cores idle).
  std::optional<double> estimated_speedup;
};

/// A rule finding worth showing: ncu's OPT/WRN rules ordered by estimated speedup.
struct finding {
  std::string rule;
  std::string type;
  std::optional<double> estimated_speedup;
  std::string speedup_type;
  std::string text;  // first sentence(s) of the rule text
};

/// Speed-of-Light figures the primary bottleneck was derived from (percent of peak).
struct sol_figures {
  std::optional<double> compute_pct, memory_pct, dram_pct, l2_pct, l1_pct;
  std::optional<double> duration_us, waves_per_sm;
  std::optional<double> elapsed_cycles;  // Speed of Light's "Elapsed Cycles" (gpc__cycles_elapsed.max)
  std::optional<double> theoretical_occupancy_pct, achieved_occupancy_pct;
  // Achieved rates against this GPU's peaks at the clocks it was profiled at (ncu's roofline
  // metrics, default_ncu_metrics): DRAM bytes per second, and single-precision FLOP per
  // second counting an FMA as two. Absent when the profile lacks that section.
  std::optional<double> dram_bytes_per_s, dram_peak_bytes_per_s;
  std::optional<double> fp32_flops_per_s, fp32_peak_flops_per_s;
};

/// The GPU the profile ran on, as ncu queried it (device__attribute_*): what a CUDA engineer
/// asks first before choosing tile sizes, occupancy or a cache strategy.
struct device_facts {
  std::string name;                 // "NVIDIA H100 80GB HBM3"
  std::string compute_capability;   // "9.0"
  std::optional<double> sm_count, l2_bytes, shared_bytes_per_sm, shared_bytes_per_block_optin, registers_per_sm;
};

/// The deterministic classifier's verdict for one kernel instance.
struct performance_signature {
  long long id = 0;
  std::string name;      // demangled, as profiled
  std::string function;  // short name
  std::string primary = primary::unknown;
  std::string sol_band;      // "saturated", "one_sided", "heavy", "balanced", "low", "" (static)
  std::string memory_level;  // "dram", "l2", "l1" when the memory side dominates
  std::vector<std::string> primary_evidence;
  std::vector<characteristic> secondary;
  std::vector<finding> findings;
  std::vector<std::string> unknown;  // what this profile cannot tell
  sol_figures sol;
  launch_config launch;  // grid, block, registers and shared memory of the profiled launch
  device_facts device;   // empty in a static profile or a report without device attributes
  /// How strongly the profile shows the primary bottleneck, 0..1 (0 for a static profile): the
  /// busiest unit's share of peak when one is busy, the idle share when none is, ncu's
  /// LaunchConfiguration estimate for a small grid. The KB weighs states by it.
  double primary_weight = 0;
  int launches_in_run = 1;  // kernel launches in the profiled run (every kernel)
  /// Global-load sectors L1 served per sector read from DRAM (ncu flushes the caches before
  /// each replay, so DRAM reads are the data's first touches): about 1 when every byte is read
  /// once, far above 1 when the kernel re-reads what it loaded. Absent without memory tables.
  std::optional<double> global_load_reuse;
  /// Executed thread instructions that are FP32 FMAs, and FP32 adds, multiplies and FMAs
  /// together, as shares of every executed thread instruction. Absent without the counts.
  std::optional<double> ffma_share, fp32_share;
  /// The kernel computes a matrix product: its name says so, or its profile does (mostly FP32
  /// FMAs on re-read data: classifier_thresholds::product_ffma_share and product_reuse).
  bool matrix_product = false;
  bool static_only = false;

  /// True when `name` is among the secondary characteristics.
  bool has(const std::string& name) const;
  /// Names of the secondary characteristics, in order.
  std::vector<std::string> secondary_names() const;
};

}  // namespace kblaster::engine
