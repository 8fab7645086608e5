// A tiled matrix transpose through shared memory (kblaster capture test program).
// Usage: transpose [rows] [cols]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

constexpr int tile = 32;

// The same padded 32x32 tile, but the block's shape is fixed at compile time (32x8, as launched:
// four rows of the tile per thread) so both loops unroll completely: a thread issues its four
// loads together, into registers, before it stores any of them to the tile, and its four stores
// to out back to back, instead of one load or store per trip of a loop whose trip count
// (blockDim.y) the compiler cannot know. A tile wholly inside the matrix skips the bounds
// checks; an edge tile keeps them. Each element is copied, so the result is exact.
__global__ void transpose(const float* in, float* out, int rows, int cols) {
  constexpr int pass_rows = 8;                // blockDim.y: the launcher's block is (32, 8)
  constexpr int passes = tile / pass_rows;
  __shared__ float t[tile][tile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col0 = blockIdx.x * tile, row0 = blockIdx.y * tile;
  const bool whole = col0 + tile <= cols && row0 + tile <= rows;
  float v[passes];
  const int x = col0 + tx;
  if (whole) {
#pragma unroll
    for (int p = 0; p < passes; ++p) v[p] = __ldg(in + static_cast<size_t>(row0 + ty + p * pass_rows) * cols + x);
  } else {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
      const int y = row0 + ty + p * pass_rows;
      v[p] = x < cols && y < rows ? __ldg(in + static_cast<size_t>(y) * cols + x) : 0.f;
    }
  }
#pragma unroll
  for (int p = 0; p < passes; ++p) t[ty + p * pass_rows][tx] = v[p];
  __syncthreads();
  const int ox = row0 + tx;  // a column of out is a row of in
  if (whole) {
#pragma unroll
    for (int p = 0; p < passes; ++p) out[static_cast<size_t>(col0 + ty + p * pass_rows) * rows + ox] = t[tx][ty + p * pass_rows];
  } else {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
      const int oy = col0 + ty + p * pass_rows;
      if (ox < rows && oy < cols) out[static_cast<size_t>(oy) * rows + ox] = t[tx][ty + p * pass_rows];
    }
  }
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 0 of transpose.cu 1000 700
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 2 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // in, parameter 0: float32[700000], read only
  char* kb_alloc1 = static_cast<char*>(kb_out[0].data);  // out, parameter 1: float32[700000], written
  float const* in = reinterpret_cast<float const*>(kb_alloc0);
  float* out = reinterpret_cast<float*>(kb_alloc1);
  const int rows = 1000;
  const int cols = 700;
  transpose<<<dim3(22, 32, 1), dim3(32, 8, 1), 0, kb_stream>>>(in, out, rows, cols);
  return static_cast<int>(cudaGetLastError());
}
