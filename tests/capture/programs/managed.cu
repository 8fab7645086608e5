// A kernel on managed memory, which a capture must refuse (kblaster capture test program).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

int main() {
  const int n = 1 << 16;
  float* x = nullptr;
  cudaMallocManaged(&x, n * sizeof(float));
  for (int i = 0; i < n; ++i) x[i] = 1.0f;
  scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n);
  cudaDeviceSynchronize();
  std::printf("managed: x[0] = %.1f\n", x[0]);
  cudaFree(x);
  return 0;
}
