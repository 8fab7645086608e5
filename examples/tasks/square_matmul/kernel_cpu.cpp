// square_matmul, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

/// Inputs A [n, n], B [n, n]; output C [n, n], float32. i-k-j order so the inner loop streams.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2) return 1;
  const long long n = in[0].shape[0];
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < n * n; ++i) c[i] = 0.f;
  for (long long i = 0; i < n; ++i)
    for (long long k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      for (long long j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  return 0;
}
