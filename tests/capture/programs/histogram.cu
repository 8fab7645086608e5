// A 256-bin histogram of bytes with global atomics (kblaster capture test program).
// Usage: histogram [n]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void histogram(const unsigned char* data, int* bins, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[data[i]], 1);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  std::vector<unsigned char> host(n);
  unsigned state = 12345;
  for (auto& v : host) {
    state = state * 1103515245u + 12345u;
    v = static_cast<unsigned char>((state >> 16) % 200);  // bins 200..255 stay empty
  }
  unsigned char* data = nullptr;
  int* bins = nullptr;
  cudaMalloc(&data, n);
  cudaMalloc(&bins, 256 * sizeof(int));
  cudaMemcpy(data, host.data(), n, cudaMemcpyHostToDevice);
  cudaMemset(bins, 0, 256 * sizeof(int));
  histogram<<<128, 256>>>(data, bins, n);
  std::vector<int> out(256);
  cudaMemcpy(out.data(), bins, 256 * sizeof(int), cudaMemcpyDeviceToHost);
  long long total = 0;
  for (int v : out) total += v;
  std::printf("histogram of %d bytes: %lld counted, bin 0 = %d\n", n, total, out[0]);
  cudaFree(data);
  cudaFree(bins);
  return total == n ? 0 : 1;
}
