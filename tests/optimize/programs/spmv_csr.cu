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

__global__ void spmv_csr(const int* row_ptr, const int* col, const float* val, const float* x, float* y, int rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.f;
  for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum += val[j] * x[col[j]];
  y[row] = sum;
}

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 12288;
  if (rows < 64) {
    std::fprintf(stderr, "spmv_csr: at least 64 rows\n");
    return 2;
  }
  // 32 nonzeros a row. Rows come in groups of 64 that share their columns (a block-structured
  // matrix, as a mesh with several unknowns per node gives), spread over the whole vector; the
  // values repeat every 17 rows. Values are multiples of 1/8 and x holds multiples of 1/4, so
  // every product and every partial sum is exact in float: any summation order gives the same y.
  constexpr int per_row = 32;
  std::vector<int> row_ptr(rows + 1), col(static_cast<size_t>(rows) * per_row);
  std::vector<float> val(col.size());
  for (int r = 0; r <= rows; ++r) row_ptr[r] = r * per_row;
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < per_row; ++j) {
      const size_t at = static_cast<size_t>(r) * per_row + j;
      col[at] = ((r / 64) * 64 + j * 389) % rows;
      val[at] = static_cast<float>(((r % 17) * 3 + j * 5) % 17) * 0.125f - 1.f;
    }
  std::vector<float> x(rows);
  for (int i = 0; i < rows; ++i) x[i] = static_cast<float>(i % 9) * 0.25f - 1.f;

  int *d_row_ptr = nullptr, *d_col = nullptr;
  float *d_val = nullptr, *d_x = nullptr, *d_y = nullptr;
  cudaMalloc(&d_row_ptr, row_ptr.size() * sizeof(int));
  cudaMalloc(&d_col, col.size() * sizeof(int));
  cudaMalloc(&d_val, val.size() * sizeof(float));
  cudaMalloc(&d_x, x.size() * sizeof(float));
  cudaMalloc(&d_y, rows * sizeof(float));
  cudaMemcpy(d_row_ptr, row_ptr.data(), row_ptr.size() * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(d_col, col.data(), col.size() * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(d_val, val.data(), val.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(d_y, 0, rows * sizeof(float));

  spmv_csr<<<(rows + 127) / 128, 128>>>(d_row_ptr, d_col, d_val, d_x, d_y, rows);

  std::vector<float> y(rows);
  cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost);
  int wrong = 0;
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    double want = 0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) want += static_cast<double>(val[j]) * x[col[j]];
    if (std::fabs(want - y[r]) > 1e-6) ++wrong;
    total += y[r];
  }
  std::printf("spmv_csr %d rows, %zu nonzeros: sum %.3f, %d rows wrong\n", rows, col.size(), total, wrong);
  cudaFree(d_row_ptr);
  cudaFree(d_col);
  cudaFree(d_val);
  cudaFree(d_x);
  cudaFree(d_y);
  return wrong == 0 && cudaGetLastError() == cudaSuccess ? 0 : 1;
}
