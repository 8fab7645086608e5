// Static resource usage from `ptxas -v` (nvcc -Xptxas -v): per kernel registers, shared,
// constant and local memory, stack frame, spills and barriers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// What ptxas reported for one entry function on one architecture.
struct kernel_resources {
  std::string mangled_name;    // "_Z4vaddPKfS0_Pfi"
  std::string demangled_name;  // "vadd(float const*, float const*, float*, int)"
  std::string arch;            // "sm_90"
  int registers = 0;
  int barriers = 0;
  long long shared_bytes = 0;    // static shared memory ("bytes smem")
  long long constant_bytes = 0;  // sum of "bytes cmem[N]"
  long long local_bytes = 0;     // "bytes lmem" (older ptxas)
  long long stack_frame_bytes = 0;
  long long spill_store_bytes = 0;
  long long spill_load_bytes = 0;
  long long cumulative_stack_bytes = 0;
  double compile_time_ms = 0;
  int max_threads_per_block = 0;  // __launch_bounds__'s first argument as compiled (PTX .maxntid
                                  // or .reqntid, all dimensions); 0 when unbounded or unknown
  int min_blocks_per_sm = 0;      // its second (.minnctapersm); 0 when none
};

/// Every entry function in `ptxas_output`, in the order ptxas compiled them. Lines that are not
/// ptxas info lines (nvcc's own output, warnings) are ignored.
std::vector<kernel_resources> parse_ptxas_output(std::string_view ptxas_output);

/// Fills `max_threads_per_block` and `min_blocks_per_sm` of each entry of `resources` from the
/// `.entry NAME` blocks of `ptx`: the compiler's reading of __launch_bounds__, macros and
/// template arguments expanded, which no reading of the source matches.
void add_ptx_launch_bounds(std::vector<kernel_resources>& resources, std::string_view ptx);

/// Itanium demangling through the C++ runtime; returns `mangled` unchanged when it is not a
/// mangled name (extern "C" kernels).
std::string demangle(const std::string& mangled);

/// "void ns::k<32>(const float *, int)" → "ns::k<32>"; plain names pass through.
std::string function_name_of(std::string_view demangled);

}  // namespace kblaster::engine
