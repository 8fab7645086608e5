// layer_norm: one thread per row: mean, variance, then y = (x - mean) / sqrt(var + eps) * w + b.
// applied: memory_coalescing, warp_shuffle_reduction
// layer_norm: one block per row (consecutive threads touch consecutive elements); the sum and the sum of
// squared deviations are reduced with warp shuffles plus a 32-entry shared array instead of a shared tree.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide sum: each warp reduces with shuffles, warp results meet in a 32-entry shared array, the first
// warp reduces those and broadcasts the result through sh[32].
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? sh[lane] : 0.f;
    v = warp_sum(v);
    if (lane == 0) sh[32] = v;
  }
  __syncthreads();
  v = sh[32];
  __syncthreads();
  return v;
}

// One block per row, blockDim.x a multiple of 32.
__global__ void layer_norm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
  __shared__ float sh[33];
  const long long r = blockIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mean = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) mean += xr[c];
  mean = block_sum(mean, sh) / cols;
  float var = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) var += (xr[c] - mean) * (xr[c] - mean);
  var = block_sum(var, sh) / cols;
  const float inv = rsqrtf(var + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

/// Inputs x [rows, cols], weight [cols], bias [cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  layer_norm<<<rows, 128, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
      static_cast<const float*>(in[2].data), static_cast<float*>(out[0].data), rows, cols, 1e-5f);
  return static_cast<int>(cudaGetLastError());
}
