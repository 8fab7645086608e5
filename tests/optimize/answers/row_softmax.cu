// row_softmax: one thread per row, three passes (max, sum of exp, normalise). Naive but correct.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// One warp per row: lanes stride over the columns (coalesced), and the row's max and sum are
// combined with shuffles instead of one thread walking the whole row.
__global__ void row_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int warp = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float* xr = x + static_cast<long long>(warp) * cols;
  float* yr = y + static_cast<long long>(warp) * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  const int warps_per_block = 8;
  row_softmax<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), rows, cols);
  return static_cast<int>(cudaGetLastError());
}
