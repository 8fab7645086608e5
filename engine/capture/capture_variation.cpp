// Comparing the two runs of a captured launch, and the tolerance that follows.
#include "engine/capture/capture_variation.h"
#include "support/files.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

namespace kblaster::engine {

namespace {

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0    ? std::ldexp(mantissa, -24)
             : exponent == 31 ? (mantissa ? std::nan("") : INFINITY)
                              : std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -v : v;
}

double bfloat16_to_double(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  return static_cast<double>(std::bit_cast<float>(bits));
}

// The harness fails an output whose relative L2 error exceeds max(10 rtol, this), although every
// element is within atol (harness/compare.cpp: answers right only because they are small).
constexpr double harness_relative_l2_floor = 1e-3;

// How far past what two runs showed the tolerance reaches. The two runs are two draws of the
// original's rounding, and their difference is a sample, not a bound: a third run can land
// further out (which blocks' atomics come first changes with every run, and one pair of runs
// sees one arrangement). A rewrite that sums in yet another order (a tree, warp shuffles, another
// grid) carries an error of the same kind on its own side, so comparing it with one run of the
// original sees its error plus the original's: up to twice the spread; twice that again leaves
// room for the sampling. It stays far below what a real bug does (a lost or doubled
// contribution moves a sum by a whole term, not by its rounding), and it widens that output only,
// and its atol only as far as the dtype's rtol leaves an element uncovered.
constexpr double variation_margin = 4;

}  // namespace

bool is_floating_dtype(const std::string& dtype) {
  return dtype == "float32" || dtype == "float64" || dtype == "float16" || dtype == "bfloat16";
}

double element_value(const std::string& bytes, const std::string& dtype, std::uint64_t i) {
  const char* p = bytes.data();
  if (dtype == "float32") {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  if (dtype == "float64") {
    double v;
    std::memcpy(&v, p + 8 * i, 8);
    return v;
  }
  std::uint16_t v;
  std::memcpy(&v, p + 2 * i, 2);
  return dtype == "float16" ? half_to_double(v) : bfloat16_to_double(v);
}

std::string element_text(const std::string& bytes, const std::string& dtype, std::uint64_t i) {
  std::ostringstream s;
  if (is_floating_dtype(dtype)) {
    s << element_value(bytes, dtype, i);
  } else if (dtype == "int32") {
    std::int32_t v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    s << v;
  } else if (dtype == "int64") {
    std::int64_t v;
    std::memcpy(&v, bytes.data() + 8 * i, 8);
    s << v;
  } else {
    s << static_cast<unsigned>(static_cast<unsigned char>(bytes[i]));
  }
  return s.str();
}

run_variation compare_runs(const std::string& first, const std::string& second, const std::string& dtype) {
  if (first.size() != second.size())
    throw capture_error("the two runs of an allocation hold " + std::to_string(first.size()) + " and " +
                        std::to_string(second.size()) + " bytes");
  const auto size = dtype_bytes(dtype);
  const bool floating = is_floating_dtype(dtype);
  const double rtol = tolerance_for(dtype, task_spec{}).rtol;
  run_variation v;
  v.elements = first.size() / size;
  double diff2 = 0, ref2 = 0;
  bool nonfinite = false;
  for (std::uint64_t i = 0; i < v.elements; ++i) {
    const double x = floating ? element_value(first, dtype, i) : 0;
    if (floating && std::isfinite(x)) ref2 += x * x;
    if (std::memcmp(first.data() + i * size, second.data() + i * size, size) == 0) continue;
    if (v.differing++ == 0) {
      v.first = i;
      v.first_value = element_text(first, dtype, i);
      v.second_value = element_text(second, dtype, i);
    }
    if (!floating) continue;
    const double y = element_value(second, dtype, i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // NaN payloads, signed zeros
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (!nonfinite) {
        v.first_nonfinite = i;
        v.nonfinite_values = element_text(first, dtype, i) + ", then " + element_text(second, dtype, i);
      }
      nonfinite = true;
      continue;
    }
    const double d = std::fabs(x - y);
    v.max_abs = std::max(v.max_abs, d);
    // Either run may be the reference the harness compares with: the smaller magnitude.
    v.needed_atol = std::max(v.needed_atol, variation_margin * d - rtol * std::min(std::fabs(x), std::fabs(y)));
    diff2 += d * d;
  }
  v.relative_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : 0;  // the harness skips the check when the reference is 0
  v.within_tolerance = floating ? !nonfinite : v.differing == 0;
  return v;
}

run_variation variation_of(const captured_allocation& allocation, const std::string& dtype) {
  if (!allocation.varies) return compare_runs("", "", dtype);
  return compare_runs(support::read_file(allocation.after), support::read_file(allocation.again), dtype);
}

tolerance varying_tolerance(const std::string& dtype, const run_variation& variation) {
  auto tol = tolerance_for(dtype, task_spec{});
  tol.atol = std::max(tol.atol, variation.needed_atol);
  // The harness also fails an output whose relative L2 error is over max(10 rtol, 1e-3)
  // although every element is within atol: the same margin over the runs' relative L2.
  if (const double needed = variation_margin * variation.relative_l2; needed > std::max(10 * tol.rtol, harness_relative_l2_floor))
    tol.rtol = needed / 10;
  return tol;
}

}  // namespace kblaster::engine
