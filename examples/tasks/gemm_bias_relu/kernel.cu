// gemm_bias_relu: y = relu(x W^T + b) fused in one kernel, one thread per output. Naive but correct.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void gemm_bias_relu(const float* x, const float* w, const float* b, float* y, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = b[col];
  for (int i = 0; i < k; ++i) acc += x[row * k + i] * w[col * k + i];
  y[row * n + col] = acc > 0.f ? acc : 0.f;
}

/// Inputs x [m, k], weight [n, k], bias [n]; output y [m, n], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2) return 1;
  const int m = static_cast<int>(in[0].shape[0]), k = static_cast<int>(in[0].shape[1]);
  const int n = static_cast<int>(in[1].shape[0]);
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  gemm_bias_relu<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                                             static_cast<const float*>(in[2].data), static_cast<float*>(out[0].data), m, n, k);
  return static_cast<int>(cudaGetLastError());
}
