// reduce: sum of a float vector, in two passes (per-block partial sums, then one block over
// the partials). Warp shuffles inside a warp, shared memory across the warps of a block.
#include <cuda_runtime.h>

/// Sums `value` across the 32 lanes of a warp; lane 0 ends up with the total.
__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

/// Each block sums a grid-stride slice of `in` and writes its total to partial[blockIdx.x].
/// blockDim.x must be a multiple of 32 and at most 1024.
__global__ void reduce_sum(const float* __restrict__ in, float* __restrict__ partial, int n) {
  __shared__ float warp_totals[32];
  float value = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    value += in[i];
  value = warp_sum(value);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_totals[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < blockDim.x / 32 ? warp_totals[lane] : 0.0f;
    value = warp_sum(value);
    if (lane == 0) partial[blockIdx.x] = value;
  }
}

/// Sums n floats of `in` into *out (device pointer), using `scratch` (at least 1024 floats) for
/// the per-block partials. Returns the launch status.
extern "C" cudaError_t launch_reduce_sum(const float* in, float* out, float* scratch, int n,
                                         cudaStream_t stream) {
  constexpr int block = 256;
  int grid = (n + block - 1) / block;
  if (grid > 1024) grid = 1024;
  if (grid < 1) grid = 1;
  reduce_sum<<<grid, block, 0, stream>>>(in, scratch, n);
  reduce_sum<<<1, 1024, 0, stream>>>(scratch, out, grid);
  return cudaGetLastError();
}
