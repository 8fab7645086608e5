// layer_norm, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

#include <cmath>

/// Inputs x [rows, cols], weight [cols], bias [cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2) return 1;
  const long long rows = in[0].shape[0], cols = in[0].shape[1];
  const float* x = static_cast<const float*>(in[0].data);
  const float* w = static_cast<const float*>(in[1].data);
  const float* b = static_cast<const float*>(in[2].data);
  float* y = static_cast<float*>(out[0].data);
  for (long long r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double mean = 0, var = 0;
    for (long long c = 0; c < cols; ++c) mean += xr[c];
    mean /= static_cast<double>(cols);
    for (long long c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(var + 1e-5);
    for (long long c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>((xr[c] - mean) * inv * w[c] + b[c]);
  }
  return 0;
}
