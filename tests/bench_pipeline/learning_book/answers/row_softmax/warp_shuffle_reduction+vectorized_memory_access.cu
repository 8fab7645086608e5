// row_softmax: one thread per row, three passes (max, sum of exp, normalise). Naive but correct.
// applied: warp_shuffle_reduction, vectorized_memory_access
// row_softmax: one warp per row, three passes with shuffle reductions; each lane moves 16-byte float4s
// (cols % 4 == 0 and 16-byte aligned pointers), the scalar warp-per-row kernel otherwise.
#include <cstdint>
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

__global__ void row_softmax_vec4(const float* x, float* y, int rows, int cols) {
  const long long r = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const int c4 = cols >> 2;
  const float4* xr = reinterpret_cast<const float4*>(x + r * cols);
  float4* yr = reinterpret_cast<float4*>(y + r * cols);
  float m = -INFINITY;
  for (int c = lane; c < c4; c += 32) {
    const float4 v = xr[c];
    m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  m = warp_max(m);
  float s = 0.f;
  for (int c = lane; c < c4; c += 32) {
    const float4 v = xr[c];
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
  }
  s = warp_sum(s);
  for (int c = lane; c < c4; c += 32) {
    const float4 v = xr[c];
    yr[c] = make_float4(expf(v.x - m) / s, expf(v.y - m) / s, expf(v.z - m) / s, expf(v.w - m) / s);
  }
}

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int block = 128;
  const int rows_per_block = block / 32;
  const int grid = (rows + rows_per_block - 1) / rows_per_block;
  if (cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0)
    row_softmax_vec4<<<grid, block, 0, stream>>>(x, y, rows, cols);
  else
    row_softmax<<<grid, block, 0, stream>>>(x, y, rows, cols);
  return static_cast<int>(cudaGetLastError());
}
