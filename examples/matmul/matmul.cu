// matmul: single-precision C = A * B for row-major A (m x k), B (k x n), C (m x n).
// Two versions of the same product: a naive kernel (one thread per output, every operand read
// from global memory) and a shared-memory tiled kernel templated on the tile width, which is
// what an optimizer is expected to discover from the naive one.
#include <cuda_runtime.h>

/// Reads a[row * ld + col], or 0 outside the rows x cols matrix (tiles overhang the edges).
__device__ __forceinline__ float load_or_zero(const float* __restrict__ a, int rows, int cols,
                                              int ld, int row, int col) {
  return (row < rows && col < cols) ? a[row * ld + col] : 0.0f;
}

/// One thread per element of C; reads a row of A and a column of B from global memory.
__global__ void matmul_naive(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += a[row * k + i] * b[i * n + col];
  c[row * n + col] = acc;
}

/// TILE x TILE threads per block; each block stages TILE x TILE tiles of A and B in shared
/// memory so that every global element is read once per tile instead of once per thread.
template <int TILE>
__global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int m, int n, int k) {
  __shared__ float tile_a[TILE][TILE];
  __shared__ float tile_b[TILE][TILE + 1];  // +1 column: no bank conflicts on the transposed read
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    tile_a[threadIdx.y][threadIdx.x] = load_or_zero(a, m, k, k, row, t + threadIdx.x);
    tile_b[threadIdx.y][threadIdx.x] = load_or_zero(b, k, n, n, t + threadIdx.y, col);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; ++i) acc += tile_a[threadIdx.y][i] * tile_b[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

/// Launches C = A * B on `stream`: the tiled kernel with 16 x 16 tiles, or the naive one when
/// `naive` is set (the baseline the optimizer starts from). Returns the launch status.
extern "C" cudaError_t launch_matmul(const float* a, const float* b, float* c, int m, int n,
                                     int k, bool naive, cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0) return cudaSuccess;
  constexpr int tile = 16;
  const dim3 block(tile, tile);
  const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
  if (naive) {
    matmul_naive<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  } else {
    matmul_tiled<tile><<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  }
  return cudaGetLastError();
}
