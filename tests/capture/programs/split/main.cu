// The rest of the split program: allocations, data, two saxpy steps, a checksum.
// Usage: split_app [n]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

void run_saxpy(float a, const float* x, float* y, int n);

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i % 97) / 97.0f;
    hy[i] = static_cast<float>(i % 13) - 6.0f;
  }
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  run_saxpy(2.0f, x, y, n);
  run_saxpy(0.5f, x, y, n);
  cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (float v : hy) sum += v;
  std::printf("checksum %.6f\n", sum);
  cudaFree(x);
  cudaFree(y);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
