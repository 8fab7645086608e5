// vector_add: c = a + b, one thread per element. Naive but correct; the KernelBlaster task ABI.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void vector_add(const float* a, const float* b, float* c, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

/// Inputs a, b; output c, all float32 of the same length.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  const int block = 256;
  const long long grid = (n + block - 1) / block;
  vector_add<<<static_cast<unsigned>(grid), block, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data), static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
