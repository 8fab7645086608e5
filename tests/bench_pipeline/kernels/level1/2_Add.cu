// 2_Add: c = a + b: naive initial kernel for the bench pipeline's deferred-model test (one thread per element).
// Written for KernelBlaster's tests; its GPU results are recorded in tests/optimize/recordings/.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void add_kernel(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

static long long numel(const DLTensor& t) {
  long long n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const long long n = numel(out[0]);
  if (n == 0) return 0;
  const unsigned grid = static_cast<unsigned>((n + 255) / 256);
  add_kernel<<<grid, 256, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data), static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
