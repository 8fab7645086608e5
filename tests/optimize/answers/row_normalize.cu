// row_normalize: each thread normalizes one element by its row's L2 norm (kblaster capture test program).
// Usage: row_normalize [rows] [cols]
// The naive first version a CUDA engineer writes: every thread recomputes its whole row's norm.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// The same launch (one thread per element), but a warp computes each row norm it needs once:
// its lanes stride the row together (coalesced) and reduce with shuffles, instead of every
// thread walking the whole row alone. A warp spans at most a few rows (all of them when cols
// is small), so it loops over the rows its 32 elements fall in.
__global__ void row_normalize(const float* x, float* out, int rows, int cols) {
  const long long n = static_cast<long long>(rows) * cols;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const long long warp_first = i - lane;
  if (warp_first >= n) return;
  const long long warp_last = warp_first + 31 < n ? warp_first + 31 : n - 1;
  const long long my_row = i < n ? i / cols : -1;
  float my_scale = 0.f;
  for (long long row = warp_first / cols; row <= warp_last / cols; ++row) {
    float sum = 0.f;
    const float* r = x + row * cols;
    for (int c = lane; c < cols; c += 32) sum += r[c] * r[c];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (row == my_row) my_scale = rsqrtf(sum + 1e-12f);
  }
  if (i < n) out[i] = x[i] * my_scale;
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 0 of row_normalize.cu 64 256
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 2 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // x, parameter 0: float32[16384], read only
  char* kb_alloc1 = static_cast<char*>(kb_out[0].data);  // out, parameter 1: float32[16384], written
  float const* x = reinterpret_cast<float const*>(kb_alloc0);
  float* out = reinterpret_cast<float*>(kb_alloc1);
  const int rows = 64;
  const int cols = 256;
  row_normalize<<<dim3(64, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>(x, out, rows, cols);
  return static_cast<int>(cudaGetLastError());
}
