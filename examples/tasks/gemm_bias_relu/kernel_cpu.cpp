// gemm_bias_relu, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

/// Inputs x [m, k], weight [n, k], bias [n]; output y [m, n], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2) return 1;
  const long long m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  const float* w = static_cast<const float*>(in[1].data);
  const float* b = static_cast<const float*>(in[2].data);
  float* y = static_cast<float*>(out[0].data);
  for (long long r = 0; r < m; ++r)
    for (long long c = 0; c < n; ++c) {
      float acc = b[c];
      for (long long i = 0; i < k; ++i) acc += x[r * k + i] * w[c * k + i];
      y[r * n + c] = acc > 0.f ? acc : 0.f;
    }
  return 0;
}
