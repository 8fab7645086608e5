// The deterministic state classifier: turns a profiled kernel instance (or a static profile)
// into a performance_signature.
//
// Primary bottleneck, from Speed-of-Light (percent of peak; SM = "Compute (SM) Throughput",
// MEM = "Memory Throughput"), with Nsight Compute's own SOLBottleneck thresholds:
//   1. max(SM, MEM) >= 80           → saturated: compute_bound, or memory_bound_<level>.
//   2. SM < 60 and MEM < 60         → small_grid when the grid is under one wave (waves per
//                                      SM < 1 or fewer blocks than SMs), else latency_bound.
//   3. the other side under 60      → the larger side is the only unit really in use, the case
//                                      ncu's rule sends you to that unit for: <side>_bound
//                                      ("one_sided": vadd at DRAM 77 % / SM 41 % is DRAM-bound,
//                                      and so is a tiled transpose at DRAM 62 % / SM 54 %, though
//                                      within 10 points: an SM at 54 % is not a busy one).
//   4. |SM - MEM| >= 10             → both at 60 or more, the larger leads: <side>_heavy.
//   5. otherwise                    → balanced (both at 60 % or more, within 10 points).
// The memory level is the busiest of DRAM, L2 and L1/TEX ("L1/TEX Cache Throughput", which
// includes shared memory). Every threshold is in classifier_thresholds below.
#pragma once

#include "engine/toolchain/occupancy.h"
#include "engine/state/performance_signature.h"
#include "engine/profile/profile_report.h"
#include "engine/toolchain/ptxas_parser.h"

#include <optional>

namespace kblaster::engine {

/// Every number the classifier compares against, in one place.
struct classifier_thresholds {
  double saturated_pct = 80;       // ncu SOLBottleneck "high"
  double low_pct = 60;             // ncu SOLBottleneck "low"
  double heavy_gap_pct = 10;       // ncu SOLBottleneck gap between compute and memory
  double memory_level_tie_pct = 5;  // DRAM this close to the busiest cache level is the limit
  double rule_speedup_pct = 5;     // an OPT rule's estimate that makes its issue a characteristic
  double access_pattern_speedup_pct = 20;  // MemoryCacheAccessPattern (global) is noisier
  // A profile of counters alone (no rules): global sectors moved beyond those the accesses need,
  // as a share (a tiled transpose's edge tiles: 5.6 %; a register-blocked SGEMM: 9.7 %; SpMVs
  // 64-85 %), and global stores using at most this many bytes of a 32-byte sector (one lane's
  // float per sector: 4).
  double excess_sectors_pct = 10;
  double store_bytes_per_sector = 8;
  double local_pattern_speedup_pct = 10;   // MemoryCacheAccessPattern (local loads/stores)
  double divergence_active_threads = 24;   // of 32: below this the warps are divergent
  double local_instruction_share = 0.02;   // local ld/st among executed instructions
  double atomic_request_share = 0.05;      // L2 atomic/reduction requests per launched thread
  // A kernel this short is dominated by launch cost: a launch takes about 3-5 us from the host
  // call to the kernel starting, so a 9 us kernel is not launch-bound (nothing to merge in one).
  double launch_bound_us = 5;
  double many_launches = 100;              // … or launched this often at under 2 × that
  double tensor_pipe_idle_pct = 1;         // tensor pipe busier than this counts as used
  double data_reuse_ratio = 2;             // global-load sectors per DRAM sector read: re-read data
  // A grid of at least this many blocks per SM is larger than a grid-stride loop would launch (it
  // caps the grid at 8-64 blocks per SM): below it, such a loop launches the same grid.
  double many_blocks_per_sm = 8;
  // No floating-point work to speak of: FP32 adds, multiplies and FMAs under this share of the
  // executed thread instructions, and the FP16, FP64 and tensor pipes each under fp_pipe_pct.
  // An SM side that leads then is busy with index arithmetic and memory instructions
  // (integer_overhead): an interleaved reduction at SM 78 % runs 0.4 % FP32 instructions.
  double fp_work_share = 0.05;
  double fp_pipe_pct = 5;
  // A matrix product by its profile, whatever its name: FP32 FMAs at least this share of the
  // executed thread instructions, on data each global load re-reads at least product_reuse times
  // (a register-blocked SGEMM: 69 % FFMA, reuse 12; an FMA chain on registers loads nothing; a
  // naive or shared-memory-tiled GEMM spends most of its instructions on loads, 23-37 % FFMA).
  double product_ffma_share = 0.5;
  double product_reuse = 8;
};

/// What the classifier may know beside the instance itself.
struct classify_context {
  int launches_of_same_function = 1;  // in the whole report
  std::optional<kernel_resources> resources;  // from ptxas, when the source was compiled
  classifier_thresholds thresholds;
};

/// The weight of a signature's primary bottleneck (performance_signature::primary_weight) from
/// its Speed-of-Light figures and ncu's LaunchConfiguration estimate (percent), where it fired.
double primary_weight_of(const performance_signature& s, std::optional<double> launch_configuration_pct);

/// True when a kernel's name says it computes a matrix product (gemm, matmul, bmm, conv,
/// attention, linear). A profile says so too (performance_signature::matrix_product), by its
/// instruction mix and data reuse, for a kernel whose name says nothing.
bool looks_like_matrix_product(const std::string& function);

/// Classifies one profiled kernel instance.
performance_signature classify(const kernel_instance& k, const classify_context& ctx = {});

/// Classifies every instance of `report`, filling launches_of_same_function from the report.
std::vector<performance_signature> classify_report(const profile_report& report,
                                                   const classifier_thresholds& t = {});

/// A static profile: no GPU run, only ptxas resources and the occupancy calculator for a block
/// of `block_size` threads, which `block_origin` says where it comes from ("its
/// __launch_bounds__", "the launch `<<<…>>>` in the file"); empty: an assumed block, said so.
/// The primary bottleneck is "unknown"; `unknown` says what is missing.
performance_signature classify_static(const kernel_resources& r, const sm_limits& limits,
                                      int block_size, long long dynamic_shared_bytes = 0,
                                      const std::string& block_origin = {});

}  // namespace kblaster::engine
