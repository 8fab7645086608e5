// Sums of floats into a few bins with atomicAdd (kblaster capture test program). The order in
// which the blocks' additions reach a bin changes from run to run, and with it the rounding: an
// original whose result varies between runs of the same launch on the same memory.
// Usage: bin_sum [n] [bins]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void bin_sum(const float* x, float* sums, int n, int bins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&sums[i % bins], x[i]);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 22;
  const int bins = argc > 2 ? std::atoi(argv[2]) : 32;
  if (n <= 0 || bins <= 0) {
    std::fprintf(stderr, "usage: bin_sum [n > 0] [bins > 0]\n");
    return 2;
  }
  // The second half takes back most of the first (-7/8 of it, in the same bin when n / 2 is a
  // multiple of bins): the sums end small while the running sums they pass through are large,
  // which is where the order of the additions shows.
  std::vector<float> host(n);
  unsigned state = 2024;
  for (int i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    host[i] = i < n / 2 ? static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.f - 1.f  // [-1, 1)
                        : -0.875f * host[i - n / 2];
  }
  float *x = nullptr, *sums = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&sums, bins * sizeof(float));
  cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(sums, 0, bins * sizeof(float));
  bin_sum<<<1024, 256>>>(x, sums, n, bins);
  std::vector<float> out(bins);
  cudaMemcpy(out.data(), sums, bins * sizeof(float), cudaMemcpyDeviceToHost);
  double total = 0, exact = 0;
  for (float v : out) total += v;
  for (float v : host) exact += v;
  std::printf("bin_sum of %d floats into %d bins: total %.4f (in double on the host: %.4f)\n", n, bins, total, exact);
  cudaFree(x);
  cudaFree(sums);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
