// saxpy for a program built by its own build (kblaster capture test program): this file has the
// kernel and the host function that launches it, main.cu the rest; build.sh links them.
#include <cuda_runtime.h>

__global__ void saxpy(float a, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void run_saxpy(float a, const float* x, float* y, int n) {
  const int block = 256;
  saxpy<<<(n + block - 1) / block, block>>>(a, x, y, n);
}
