// vadd: element-wise vector addition, c[i] = a[i] + b[i]. The smallest KernelBlaster example.
// A grid-stride loop so that any n works with any grid; the host launcher picks the grid.
#include <cuda_runtime.h>

/// Adds two float vectors of length n into c.
__global__ void vadd(const float* __restrict__ a, const float* __restrict__ b,
                     float* __restrict__ c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + b[i];
  }
}

/// Launches vadd on `stream` over device buffers of n floats; returns the launch status.
extern "C" cudaError_t launch_vadd(const float* a, const float* b, float* c, int n,
                                   cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int block = 256;
  // Enough blocks to cover n once, capped so that huge n uses the grid-stride loop instead.
  const int grid = (n + block - 1) / block < 65535 ? (n + block - 1) / block : 65535;
  vadd<<<grid, block, 0, stream>>>(a, b, c, n);
  return cudaGetLastError();
}
