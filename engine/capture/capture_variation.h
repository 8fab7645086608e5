// How much the original kernel varies from run to run. The capture agent runs the captured
// launch twice from the same memory (docs/capture-format.md); a kernel whose result depends on
// the order of its floating-point atomics, or on a race, comes out different. This reads the two
// runs of an allocation by its dtype and says how far apart they are, and how far that widens
// the output's tolerance, so that the original verifies against itself and a rewrite is held to
// no less than the original achieves.
#pragma once

#include "engine/capture/kernel_capture.h"
#include "engine/task/task.h"

#include <cstdint>
#include <string>

namespace kblaster::engine {

/// The two runs of one allocation, element by element as its dtype reads.
struct run_variation {
  std::uint64_t elements = 0;  // how many elements there are
  std::uint64_t differing = 0; // how many differ (by bits)
  std::uint64_t first = 0;     // the first that does
  std::string first_value, second_value;  // that element in each run, as text
  double max_abs = 0;          // the largest absolute difference (floating dtypes)
  double relative_l2 = 0;      // ‖first − second‖ / ‖first‖ (floating dtypes; 0 when ‖first‖ is 0)
  // The smallest atol that, with the dtype's rtol, holds every element of one run within the
  // tolerance of the other with room to spare (variation_margin in the .cpp says how much and
  // why): what rtol · |value| covers already needs no atol.
  double needed_atol = 0;
  // False when no tolerance covers the difference: a bit-exact dtype (integers, bool, bytes), or
  // a NaN or an infinity in one run where the other has something else (at `first_nonfinite`).
  bool within_tolerance = true;
  std::uint64_t first_nonfinite = 0;
  std::string nonfinite_values;  // "nan, then 0.5": that element in each run
};

/// True for float32, float64, float16 and bfloat16: the dtypes compared within a tolerance.
bool is_floating_dtype(const std::string& dtype);

/// Element `i` of raw `bytes` read as the floating `dtype`, as a double.
double element_value(const std::string& bytes, const std::string& dtype, std::uint64_t i);

/// Element `i` of raw `bytes` read as `dtype`, as text ("0.25", "-3", "17").
std::string element_text(const std::string& bytes, const std::string& dtype, std::uint64_t i);

/// Compares two runs' contents of one allocation (equal sizes, a multiple of the dtype's).
run_variation compare_runs(const std::string& first, const std::string& second, const std::string& dtype);

/// The first and second runs of a varying allocation (its `after` and `again`).
run_variation variation_of(const captured_allocation& allocation, const std::string& dtype);

/// The tolerance of an output of `dtype` on which the original varies by `variation`: the
/// dtype's, with atol widened to `needed_atol` and rtol as far as the harness's relative-L2
/// check (harness/compare.cpp) needs, never below the dtype's.
tolerance varying_tolerance(const std::string& dtype, const run_variation& variation);

}  // namespace kblaster::engine
