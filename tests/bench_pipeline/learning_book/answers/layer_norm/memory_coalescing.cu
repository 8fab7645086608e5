// layer_norm: one thread per row: mean, variance, then y = (x - mean) / sqrt(var + eps) * w + b.
// applied: memory_coalescing
// layer_norm: one block per row; consecutive threads read and write consecutive elements of the row (and of
// w and b), and the sum and the sum of squared deviations are combined with shared-memory tree reductions
// (blockDim.x a power of two <= 128).
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void layer_norm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
  __shared__ float red[128];
  const long long r = blockIdx.x;
  const int t = threadIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  float mean = 0.f;
  for (int c = t; c < cols; c += blockDim.x) mean += xr[c];
  red[t] = mean;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  mean = red[0] / cols;
  __syncthreads();
  float var = 0.f;
  for (int c = t; c < cols; c += blockDim.x) var += (xr[c] - mean) * (xr[c] - mean);
  red[t] = var;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  var = red[0] / cols;
  const float inv = rsqrtf(var + eps);
  for (int c = t; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
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
