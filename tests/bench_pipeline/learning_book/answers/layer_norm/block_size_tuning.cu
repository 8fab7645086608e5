// layer_norm: one thread per row: mean, variance, then y = (x - mean) / sqrt(var + eps) * w + b.
// applied: block_size_tuning
// layer_norm: one thread per row (naive structure) with a retuned block: one warp per block instead of 128
// threads, so that the few long-running row threads spread over 4x as many SMs.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void __launch_bounds__(32) layer_norm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + static_cast<long long>(r) * cols;
  float* yr = y + static_cast<long long>(r) * cols;
  float mean = 0.f;
  for (int c = 0; c < cols; ++c) mean += xr[c];
  mean /= cols;
  float var = 0.f;
  for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
  var /= cols;
  const float inv = rsqrtf(var + eps);
  for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

/// Inputs x [rows, cols], weight [cols], bias [cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  const int block = 32;
  layer_norm<<<(rows + block - 1) / block, block, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
      static_cast<const float*>(in[2].data), static_cast<float*>(out[0].data), rows, cols, 1e-5f);
  return static_cast<int>(cudaGetLastError());
}
