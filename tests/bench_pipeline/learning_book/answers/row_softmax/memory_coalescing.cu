// row_softmax: one thread per row, three passes (max, sum of exp, normalise). Naive but correct.
// applied: memory_coalescing
// row_softmax: one block per row, three passes (max, sum of exp, normalise); consecutive threads read and
// write consecutive elements of the row (coalesced) and the max and sum are combined with shared-memory tree
// reductions (blockDim.x a power of two <= 128).
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void row_softmax(const float* x, float* y, int rows, int cols) {
  __shared__ float red[128];
  const long long r = blockIdx.x;
  const int t = threadIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float m = -INFINITY;
  for (int c = t; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  red[t] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmaxf(red[t], red[t + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int c = t; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
  red[t] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  sum = red[0];
  for (int c = t; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / sum;
}

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  row_softmax<<<rows, 128, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), rows, cols);
  return static_cast<int>(cudaGetLastError());
}
