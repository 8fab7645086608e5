// row_softmax: one thread per row, three passes (max, sum of exp, normalise). Naive but correct.
// applied: warp_shuffle_reduction
// row_softmax: one warp per row, three passes (max, sum of exp, normalise) with the lanes striding over the
// row and the max and sum combined by __shfl_xor_sync.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// blockDim.x is a multiple of 32: a warp's lanes share one row and leave together.
__global__ void row_softmax(const float* x, float* y, int rows, int cols) {
  const long long r = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  m = warp_max(m);
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
  s = warp_sum(s);
  for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  const int block = 128;
  const int rows_per_block = block / 32;
  row_softmax<<<(rows + rows_per_block - 1) / rows_per_block, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), rows, cols);
  return static_cast<int>(cudaGetLastError());
}
