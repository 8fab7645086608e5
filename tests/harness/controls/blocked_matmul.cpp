// blocked_matmul: C = A·B in cache-sized blocks, i-k-j order. A legitimate candidate for the
// CPU path: the harness must pass it. Written for KernelBlaster's tests.
// kblaster-task: square_matmul
#include <dlpack/dlpack.h>

#include <algorithm>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const long long n = in[0].shape[0];
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  std::fill(c, c + n * n, 0.f);
  constexpr long long block = 64;
  for (long long i0 = 0; i0 < n; i0 += block)
    for (long long k0 = 0; k0 < n; k0 += block)
      for (long long i = i0; i < std::min(i0 + block, n); ++i)
        for (long long k = k0; k < std::min(k0 + block, n); ++k) {
          const float aik = a[i * n + k];
          for (long long j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
        }
  return 0;
}
