// One ReLU over N floats (argv[1], default KernelBench 19_ReLU's 4096 x 393216), launched once:
// the program tools/gpu/ncu_cost/ncu_cost.sh profiles to see what a profile costs and why.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

int main(int argc, char** argv) {
  const long long n = argc > 1 ? atoll(argv[1]) : 4096LL * 393216LL;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess || cudaMalloc(&y, n * sizeof(float)) != cudaSuccess) {
    std::puts("out of device memory");
    return 1;
  }
  cudaMemset(x, 0, n * sizeof(float));
  relu_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, y, n);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("relu over %lld floats: %s\n", n, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
