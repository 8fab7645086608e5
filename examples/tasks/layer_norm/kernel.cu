// layer_norm: one thread per row: mean, variance, then y = (x - mean) / sqrt(var + eps) * w + b.
// Naive but correct.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void layer_norm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
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
  layer_norm<<<(rows + 127) / 128, 128, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
      static_cast<const float*>(in[2].data), static_cast<float*>(out[0].data), rows, cols, 1e-5f);
  return static_cast<int>(cudaGetLastError());
}
