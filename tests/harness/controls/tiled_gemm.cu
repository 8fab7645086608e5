// tiled_gemm.cu: C = A·B with 32×32 tiles staged in shared memory, each thread accumulating one
// element. A legitimate fast candidate: the harness must pass it (a harness that refuses
// everything proves nothing). Written for KernelBlaster's tests.
// kblaster-task: square_matmul
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

constexpr int tile = 32;

__global__ void tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float as[tile][tile];
  __shared__ float bs[tile][tile + 1];
  const int row = blockIdx.y * tile + threadIdx.y, col = blockIdx.x * tile + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += tile) {
    as[threadIdx.y][threadIdx.x] = row < n && k0 + threadIdx.x < n ? a[row * n + k0 + threadIdx.x] : 0.f;
    bs[threadIdx.y][threadIdx.x] = col < n && k0 + threadIdx.y < n ? b[(k0 + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < tile; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  const int n = static_cast<int>(in[0].shape[0]);
  const dim3 block(tile, tile), grid((n + tile - 1) / tile, (n + tile - 1) / tile);
  tiled<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                                    static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
