// spmv_csr: y = A x for a sparse matrix in CSR form, one thread per row (kblaster model-session test program).
// Usage: spmv_csr [rows]
// The first version a CUDA engineer writes: each thread walks its own row, so the lanes of a warp
// read addresses a row apart and a matrix of 12,288 rows launches 96 blocks on a GPU of 132 SMs.
// Written for issue 36: its model session (tests/optimize/programs/README.md) is replayed in CI.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// The same y = A x with a warp per row: the warp's 32 lanes stride along the row together, so its
// values and column indices are read in whole sectors, and combine their partial sums with
// shuffles, lane 0 writing y. Eight rows per block of 256 threads: rows / 8 blocks, where one
// thread per row launched rows / 128 and left most of the GPU idle. A row whose nonzeros do not
// fill the lanes leaves some idle; the sum over each row is taken in another order, which the
// verification against the original checks (every product here is exact in float).
__global__ void spmv_csr(const int* row_ptr, const int* col, const float* val, const float* x, float* y, int rows) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps: a warp's 32 lanes share one row
  float sum = 0.f;
  for (int j = row_ptr[row] + lane; j < row_ptr[row + 1]; j += 32) sum += val[j] * x[col[j]];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 0 of spmv_csr.cu 12288
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 5 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // row_ptr, parameter 0: int32[12289], read only
  char* kb_alloc1 = static_cast<char*>(kb_in[1].data);  // col, parameter 1: int32[393216], read only
  char* kb_alloc2 = static_cast<char*>(kb_in[2].data);  // val, parameter 2: float32[393216], read only
  char* kb_alloc3 = static_cast<char*>(kb_in[3].data);  // x, parameter 3: float32[12288], read only
  char* kb_alloc4 = static_cast<char*>(kb_out[0].data);  // y, parameter 4: float32[12288], written
  int const* row_ptr = reinterpret_cast<int const*>(kb_alloc0);
  int const* col = reinterpret_cast<int const*>(kb_alloc1);
  float const* val = reinterpret_cast<float const*>(kb_alloc2);
  float const* x = reinterpret_cast<float const*>(kb_alloc3);
  float* y = reinterpret_cast<float*>(kb_alloc4);
  const int rows = 12288;
  spmv_csr<<<dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>(row_ptr, col, val, x, y, rows);  // a warp per row
  return static_cast<int>(cudaGetLastError());
}
