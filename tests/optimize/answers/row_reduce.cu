// Row sums of a rows x cols matrix, one block per row, a shared-memory tree (kblaster capture test program).
// Usage: row_reduce [rows] [cols]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// One warp per row instead of one 256-thread block per row: the lanes read the row 16 bytes at a
// time (float4, from the row's first 16-byte boundary; the floats before it and after the last
// whole float4 one at a time) and the warp adds the lanes' sums with shuffles: no shared memory
// and no __syncthreads. A block of 256 threads sums 8 rows (the launcher below launches
// ceil(rows / 8) blocks), so 2048 rows take 256 blocks that are all resident at once, each lane
// with its loads in flight together instead of two waves of blocks walking a shared-memory tree.
// The block must be a whole number of warps.
__global__ void row_sum(const float* x, float* out, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp: the shuffles below see all 32 lanes
  const float* r = x + static_cast<size_t>(row) * cols;
  int head = static_cast<int>(((16 - (reinterpret_cast<unsigned long long>(r) & 15)) & 15) / 4);
  if (head > cols) head = cols;
  const int quads = cols > head ? (cols - head) / 4 : 0;
  const float4* v = reinterpret_cast<const float4*>(r + head);
  float acc = lane < head ? r[lane] : 0.f;
#pragma unroll 4
  for (int k = lane; k < quads; k += 32) {
    const float4 q = __ldg(v + k);
    acc += (q.x + q.y) + (q.z + q.w);
  }
  for (int c = head + quads * 4 + lane; c < cols; c += 32) acc += r[c];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) out[row] = acc;
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 0 of row_reduce.cu 2048 1000
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 2 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // x, parameter 0: float32[2048000], read only
  char* kb_alloc1 = static_cast<char*>(kb_out[0].data);  // out, parameter 1: float32[2048], written
  float const* x = reinterpret_cast<float const*>(kb_alloc0);
  float* out = reinterpret_cast<float*>(kb_alloc1);
  const int rows = 2048;
  const int cols = 1000;
  row_sum<<<dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>(x, out, rows, cols);  // 8 rows per block: one per warp
  return static_cast<int>(cudaGetLastError());
}
