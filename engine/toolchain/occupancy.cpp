// The occupancy calculator. Figures per compute capability come from the CUDA C++ Programming
// Guide's "Compute Capabilities" table; the register allocation per sub-partition matches what
// cudaOccupancyMaxActiveBlocksPerMultiprocessor returned on an H100
// (tests/fixtures/occupancy/h100_reference.csv).
#include "engine/toolchain/occupancy.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace kblaster::engine {

std::optional<sm_limits> limits_for(int major, int minor) {
  sm_limits l;
  l.major = major;
  l.minor = minor;
  const int cc = major * 10 + minor;
  switch (cc) {
    case 70: case 72:  // Volta
      l.max_warps_per_sm = 64; l.max_blocks_per_sm = 32;
      l.shared_per_sm = 98304; l.max_shared_per_block = 98304;
      l.reserved_shared_per_block = 0; l.shared_allocation_unit = 256;
      return l;
    case 75:  // Turing
      l.max_warps_per_sm = 32; l.max_blocks_per_sm = 16;
      l.shared_per_sm = 65536; l.max_shared_per_block = 65536;
      l.reserved_shared_per_block = 0; l.shared_allocation_unit = 256;
      return l;
    case 80:  // A100
      l.max_warps_per_sm = 64; l.max_blocks_per_sm = 32;
      l.shared_per_sm = 167936; l.max_shared_per_block = 166912;
      return l;
    case 86:  // GA10x
      l.max_warps_per_sm = 48; l.max_blocks_per_sm = 16;
      l.shared_per_sm = 102400; l.max_shared_per_block = 101376;
      return l;
    case 87:  // Orin
      l.max_warps_per_sm = 48; l.max_blocks_per_sm = 16;
      l.shared_per_sm = 167936; l.max_shared_per_block = 166912;
      return l;
    case 89:  // Ada
      l.max_warps_per_sm = 48; l.max_blocks_per_sm = 24;
      l.shared_per_sm = 102400; l.max_shared_per_block = 101376;
      return l;
    case 90:  // Hopper
    case 100: case 103:  // Blackwell data centre
      l.max_warps_per_sm = 64; l.max_blocks_per_sm = 32;
      l.shared_per_sm = 233472; l.max_shared_per_block = 232448;
      return l;
    case 110:  // Thor
      l.max_warps_per_sm = 48; l.max_blocks_per_sm = 24;
      l.shared_per_sm = 233472; l.max_shared_per_block = 232448;
      return l;
    case 120: case 121:  // Blackwell GeForce / DGX Spark
      l.max_warps_per_sm = 48; l.max_blocks_per_sm = 24;
      l.shared_per_sm = 102400; l.max_shared_per_block = 101376;
      return l;
    default:
      return std::nullopt;
  }
}

std::optional<sm_limits> limits_for(const std::string& arch) {
  std::string digits;
  bool seen_dot = false;
  int major = -1;
  for (char c : arch) {
    if (c >= '0' && c <= '9') digits.push_back(c);
    else if (c == '.' && !digits.empty()) { major = std::atoi(digits.c_str()); digits.clear(); seen_dot = true; }
  }
  if (seen_dot) return digits.empty() ? std::nullopt : limits_for(major, std::atoi(digits.c_str()));
  if (digits.size() < 2) return std::nullopt;
  const int cc = std::atoi(digits.c_str());
  return limits_for(cc / 10, cc % 10);
}

const char* to_string(occupancy_limiter l) {
  switch (l) {
    case occupancy_limiter::registers: return "registers";
    case occupancy_limiter::shared_memory: return "shared_memory";
    case occupancy_limiter::warps: return "warps";
    case occupancy_limiter::blocks: return "blocks";
    case occupancy_limiter::none: return "none";
  }
  return "none";
}

namespace {
long long round_up(long long v, long long unit) { return unit <= 0 ? v : (v + unit - 1) / unit * unit; }
}  // namespace

occupancy_result compute_occupancy(const sm_limits& limits, const occupancy_input& in) {
  occupancy_result r;
  if (in.block_size <= 0 || in.block_size > limits.max_threads_per_block) {
    r.error = "block size " + std::to_string(in.block_size) + " is outside 1.." +
              std::to_string(limits.max_threads_per_block);
    return r;
  }
  if (in.registers_per_thread > limits.max_registers_per_thread) {
    r.error = std::to_string(in.registers_per_thread) + " registers per thread exceed the limit of " +
              std::to_string(limits.max_registers_per_thread);
    return r;
  }
  const int warps_per_block = (in.block_size + 31) / 32;
  constexpr int unlimited = std::numeric_limits<int>::max();

  r.blocks_by_warps = limits.max_warps_per_sm / warps_per_block;
  r.blocks_by_sm = limits.max_blocks_per_sm;

  if (in.registers_per_thread <= 0) {
    r.blocks_by_registers = unlimited;
  } else {
    // Registers are allocated per warp in units, and each sub-partition's share of the file
    // holds whole warps only.
    const long long per_warp = round_up(static_cast<long long>(in.registers_per_thread) * 32,
                                        limits.register_allocation_unit);
    const long long per_partition = limits.registers_per_sm / limits.sub_partitions;
    const long long warps = per_partition / per_warp * limits.sub_partitions;
    r.blocks_by_registers = static_cast<int>(warps / warps_per_block);
  }

  const long long carveout = std::min(in.shared_carveout.value_or(limits.shared_per_sm), limits.shared_per_sm);
  const long long per_block = round_up(in.shared_bytes_per_block + limits.reserved_shared_per_block,
                                       limits.shared_allocation_unit);
  if (in.shared_bytes_per_block > limits.max_shared_per_block) {
    r.error = std::to_string(in.shared_bytes_per_block) + " bytes of shared memory per block exceed the " +
              std::to_string(limits.max_shared_per_block) + "-byte limit";
    return r;
  }
  r.blocks_by_shared = per_block > 0 ? static_cast<int>(carveout / per_block) : unlimited;

  r.active_blocks = std::min({r.blocks_by_warps, r.blocks_by_sm, r.blocks_by_registers, r.blocks_by_shared});
  r.active_warps = r.active_blocks * warps_per_block;
  r.occupancy = static_cast<double>(r.active_warps) / limits.max_warps_per_sm;
  if (r.active_blocks == 0 && r.blocks_by_registers == 0)
    r.error = "too many registers for a block of " + std::to_string(in.block_size) + " threads";
  // The limiter: the resource whose own bound equals the answer; ties go to the block size
  // (SM block limit, then warps), since a bigger block is then the fix.
  if (r.active_warps >= limits.max_warps_per_sm) r.limiter = occupancy_limiter::none;
  else if (r.active_blocks == r.blocks_by_sm) r.limiter = occupancy_limiter::blocks;
  else if (r.active_blocks == r.blocks_by_warps) r.limiter = occupancy_limiter::warps;
  else if (r.active_blocks == r.blocks_by_registers) r.limiter = occupancy_limiter::registers;
  else r.limiter = occupancy_limiter::shared_memory;
  return r;
}

}  // namespace kblaster::engine
