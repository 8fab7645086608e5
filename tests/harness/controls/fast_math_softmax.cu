// fast_math_softmax.cu: one warp per row, the row's maximum subtracted, __expf and a fast
// division: fast-math intrinsics whose error stays within the task's tolerance. A legitimate
// fast candidate: the harness must pass it, stress inputs included. Written for KernelBlaster's tests.
// kblaster-task: row_softmax
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void warp_softmax(const float* x, float* y, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + static_cast<long long>(row) * cols;
  float* yr = y + static_cast<long long>(row) * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += __expf(xr[c] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int c = lane; c < cols; c += 32) yr[c] = __fdividef(__expf(xr[c] - m), s);
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  warp_softmax<<<(rows + 7) / 8, 256, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data),
                                                  rows, cols);
  return static_cast<int>(cudaGetLastError());
}
