// layer_norm: one thread per row: mean, variance, then y = (x - mean) / sqrt(var + eps) * w + b.
// applied: warp_shuffle_reduction
// layer_norm: one warp per row: the lanes stride over the row, the sum (mean) and the sum of squared
// deviations (variance) are reduced with __shfl_xor_sync, then the lanes write y = (x - mean) * inv * w + b.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// blockDim.x is a multiple of 32: a warp's lanes share one row and leave together.
__global__ void layer_norm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
  const long long r = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mean = 0.f;
  for (int c = lane; c < cols; c += 32) mean += xr[c];
  mean = warp_sum(mean) / cols;
  float var = 0.f;
  for (int c = lane; c < cols; c += 32) var += (xr[c] - mean) * (xr[c] - mean);
  var = warp_sum(var) / cols;
  const float inv = rsqrtf(var + eps);
  for (int c = lane; c < cols; c += 32) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

/// Inputs x [rows, cols], weight [cols], bias [cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  const int block = 128;
  const int rows_per_block = block / 32;
  layer_norm<<<(rows + rows_per_block - 1) / rows_per_block, block, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
      static_cast<const float*>(in[2].data), static_cast<float*>(out[0].data), rows, cols, 1e-5f);
  return static_cast<int>(cudaGetLastError());
}
