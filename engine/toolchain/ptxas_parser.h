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
};

/// Every entry function in `ptxas_output`, in the order ptxas compiled them. Lines that are not
/// ptxas info lines (nvcc's own output, warnings) are ignored.
std::vector<kernel_resources> parse_ptxas_output(std::string_view ptxas_output);

/// Itanium demangling through the C++ runtime; returns `mangled` unchanged when it is not a
/// mangled name (extern "C" kernels).
std::string demangle(const std::string& mangled);

/// "void ns::k<32>(const float *, int)" → "ns::k<32>"; plain names pass through.
std::string function_name_of(std::string_view demangled);

}  // namespace kblaster::engine
