// Theoretical occupancy for compute capabilities 7.0 to 12.x, as the CUDA occupancy calculator
// and cudaOccupancyMaxActiveBlocksPerMultiprocessor compute it: resident blocks per SM from
// registers (allocated per warp, per SM sub-partition), shared memory (plus the per-block
// reservation), warps and the block limit, and which of them binds.
#pragma once

#include <optional>
#include <string>

namespace kblaster::engine {

/// Per-SM limits of one compute capability.
struct sm_limits {
  int major = 9, minor = 0;
  int max_warps_per_sm = 64;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int register_allocation_unit = 256;  // registers, per warp
  int sub_partitions = 4;              // the register file is split between the SM's schedulers
  long long shared_per_sm = 233472;    // largest carveout, bytes
  long long max_shared_per_block = 232448;  // opt-in maximum, bytes
  long long reserved_shared_per_block = 1024;  // the driver's per-block reservation, bytes
  int shared_allocation_unit = 128;    // bytes
  int max_threads_per_block = 1024;
};

/// Limits for compute capability major.minor; nullopt outside 7.0–12.x.
std::optional<sm_limits> limits_for(int major, int minor);
/// Parses "9.0", "sm_90", "sm_90a", "90", "compute_90" into limits; nullopt when unknown.
std::optional<sm_limits> limits_for(const std::string& arch);

/// What bounds the number of resident blocks.
enum class occupancy_limiter { registers, shared_memory, warps, blocks, none };

/// "registers", "shared_memory", "warps", "blocks", "none".
const char* to_string(occupancy_limiter l);

/// One kernel's launch as the calculator needs it.
struct occupancy_input {
  int block_size = 256;
  int registers_per_thread = 32;
  long long shared_bytes_per_block = 0;  // static + dynamic, without the driver's reservation
  std::optional<long long> shared_carveout;  // the launch's carveout; default: the SM's maximum
};

/// The calculator's answer.
struct occupancy_result {
  int active_blocks = 0;           // resident blocks per SM
  int active_warps = 0;
  double occupancy = 0;            // active warps / max warps, 0..1
  occupancy_limiter limiter = occupancy_limiter::none;
  int blocks_by_registers = 0;     // what each resource alone would allow
  int blocks_by_shared = 0;
  int blocks_by_warps = 0;
  int blocks_by_sm = 0;
  std::string error;               // non-empty when the launch cannot run at all
};

/// Theoretical occupancy of `in` on an SM with `limits`.
occupancy_result compute_occupancy(const sm_limits& limits, const occupancy_input& in);

}  // namespace kblaster::engine
