// The comparison's figures in one pass over the device's memory: what compare.cpp otherwise
// computes chunk by chunk with LibTorch's element-wise operations (about forty kernels and
// float64 temporaries per chunk, 0.4-0.6 s for a KernelBench output of 1.6 billion floats on an
// H100, five times per candidate). Here each element is read once, converted to float64 and
// folded into per-block partial figures, which the host adds in block order (deterministic).
// Plain C++ types only: compiled by nvcc without LibTorch's headers.
#pragma once

#include <cstdint>

namespace kblaster::harness {

/// The element types the device pass reads; others go the LibTorch way.
enum class device_element { float32, float64, float16, bfloat16 };

/// The figures a comparison's verdict is drawn from, for the whole tensor (from either route).
struct output_figures {
  std::int64_t unwritten = 0, first_unwritten = -1;    // NaN in out where ref is not NaN
  std::int64_t mismatches = 0, first_mismatch = -1;    // not (err <= atol + rtol |ref|)
  double max_abs_error = 0, max_rel_error = 0;         // over finite errors; rel where ref != 0
  double diff2 = 0, ref2 = 0;                          // sums of finite err^2 and finite ref^2
  bool infinite_error = false;                         // some error is not finite
  double ref_min = 0, ref_max = 0, out_min = 0, out_max = 0;  // over finite values (+-inf if none)
};

/// Compares `n` contiguous elements of `out` and `ref` (device pointers, same type) on the
/// legacy default stream and waits for the figures. Returns false, with `error` set, when the
/// device could not run it (the caller then compares the LibTorch way).
bool compare_on_device(const void* out, const void* ref, device_element type, std::int64_t n, double atol, double rtol,
                       output_figures& figures, const char** error);

}  // namespace kblaster::harness
