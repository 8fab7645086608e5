// sum_reduction: each block sums its slice in shared memory, then one atomicAdd per block.
// applied: memory_coalescing
// sum_reduction: the access pattern is already coalesced: consecutive threads of a warp read consecutive
// elements (one 128-byte run per warp-wide load), and the shared-memory tree uses sequential addressing
// (partial[t] += partial[t + s], no bank conflicts, contiguous active threads). The mapping is kept as is;
// there is no strided or transposed access to fix.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void block_sum(const float* x, float* total, long long n) {
  __shared__ float partial[256];
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}

/// Input x [n]; output a 0-d float32 tensor holding the sum.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  float* total = static_cast<float*>(out[0].data);
  cudaMemsetAsync(total, 0, sizeof(float), stream);
  block_sum<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(in[0].data), total, n);
  return static_cast<int>(cudaGetLastError());
}
