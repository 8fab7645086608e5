// sum_reduction: each block sums its slice in shared memory, then one atomicAdd per block.
// applied: warp_shuffle_reduction
// sum_reduction: each block's 256 values are reduced with __shfl_down_sync inside each warp (5 steps), the 8
// warp sums meet in a 32-entry shared array and the first warp reduces them; one atomicAdd per block.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// blockDim.x is a multiple of 32 (<= 1024).
__global__ void block_sum(const float* x, float* total, long long n) {
  __shared__ float warp_sums[32];
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float v = i < n ? x[i] : 0.f;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.f;
    v = warp_sum(v);
    if (lane == 0) atomicAdd(total, v);
  }
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
