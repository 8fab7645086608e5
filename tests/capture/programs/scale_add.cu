// y = a * x + y over n floats, a few times (kblaster capture benchmark program: its size is the
// capture's size, 8 bytes per element).
// Usage: scale_add [n] [repeats]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void scale_add(float a, const float* x, float* y, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
  const long long n = argc > 1 ? std::atoll(argv[1]) : 1 << 20;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<float> host(n);
  for (long long i = 0; i < n; ++i) host[i] = static_cast<float>(i % 977) * 0.001f;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess || cudaMalloc(&y, n * sizeof(float)) != cudaSuccess) return 2;
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  const int block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  for (int r = 0; r < repeats; ++r) scale_add<<<grid, block>>>(0.5f, x, y, n);
  cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("scale_add n=%lld x%d: y[1] = %f\n", n, repeats, host[1 % n]);
  cudaFree(x);
  cudaFree(y);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
