// Row sums of a rows x cols matrix, one block per row, a shared-memory tree (kblaster capture test program).
// Usage: row_reduce [rows] [cols]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void row_sum(const float* x, float* out, int rows, int cols) {
  __shared__ float partial[256];
  const int row = blockIdx.x;
  if (row >= rows) return;
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[static_cast<size_t>(row) * cols + c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[row] = partial[0];
}

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int cols = argc > 2 ? std::atoi(argv[2]) : 1024;
  std::vector<float> host(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 31) % 97) / 97.0f - 0.5f;
  float *x = nullptr, *out = nullptr;
  cudaMalloc(&x, host.size() * sizeof(float));
  cudaMalloc(&out, rows * sizeof(float));
  cudaMemcpy(x, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  row_sum<<<rows, 256>>>(x, out, rows, cols);
  std::vector<float> sums(rows);
  cudaMemcpy(sums.data(), out, rows * sizeof(float), cudaMemcpyDeviceToHost);
  double total = 0;
  for (float v : sums) total += v;
  std::printf("row_sum %dx%d: total %.4f\n", rows, cols, total);
  cudaFree(x);
  cudaFree(out);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
