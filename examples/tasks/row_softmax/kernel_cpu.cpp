// row_softmax, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

#include <cmath>

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const long long rows = in[0].shape[0], cols = in[0].shape[1];
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY;
    for (long long c = 0; c < cols; ++c) m = std::fmax(m, xr[c]);
    float s = 0.f;
    for (long long c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (long long c = 0; c < cols; ++c) yr[c] = std::exp(xr[c] - m) / s;
  }
  return 0;
}
