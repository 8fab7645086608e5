// row_normalize: each thread normalizes one element by its row's L2 norm (kblaster capture test program).
// Usage: row_normalize [rows] [cols]
// The naive first version a CUDA engineer writes: every thread recomputes its whole row's norm.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void row_normalize(const float* x, float* out, int rows, int cols) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(rows) * cols) return;
  const long long row = i / cols;
  float sum = 0.f;
  for (int c = 0; c < cols; ++c) {
    const float v = x[row * cols + c];
    sum += v * v;
  }
  out[i] = x[i] * rsqrtf(sum + 1e-12f);
}

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int cols = argc > 2 ? std::atoi(argv[2]) : 1024;
  const size_t n = static_cast<size_t>(rows) * cols;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
  float *x = nullptr, *out = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(out, 0, n * sizeof(float));
  const int threads = 256;
  row_normalize<<<static_cast<unsigned>((n + threads - 1) / threads), threads>>>(x, out, rows, cols);
  std::vector<float> result(n);
  cudaMemcpy(result.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  double check = 0;
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < cols; ++c) s += static_cast<double>(result[static_cast<size_t>(r) * cols + c]) * result[static_cast<size_t>(r) * cols + c];
    check += std::fabs(s - 1.0);
  }
  std::printf("row_normalize %dx%d: mean |norm - 1| %.2e\n", rows, cols, check / rows);
  cudaFree(x);
  cudaFree(out);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
