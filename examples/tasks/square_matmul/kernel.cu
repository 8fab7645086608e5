// square_matmul: C = A B, one thread per output element, no tiling. Naive but correct.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void square_matmul(const float* a, const float* b, float* c, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}

/// Inputs A [n, n], B [n, n]; output C [n, n], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2) return 1;
  const int n = static_cast<int>(in[0].shape[0]);
  const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  square_matmul<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                                            static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
