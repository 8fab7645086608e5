// What a kernel's device code does, as a KB note needs it (issue 36 item 4): a reduction, a
// transcendental, a division, a per-thread array, shared memory; read from the device functions
// only, and not fooled by a grid-stride loop's own step.
#include "engine/source/kernel_operations.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

using kblaster::engine::kernel_operations;
namespace fs = std::filesystem;

namespace {

std::set<std::string> ops(const std::string& source) { return kernel_operations(source); }

bool has(const std::set<std::string>& s, const char* name) { return s.count(name) > 0; }

}  // namespace

TEST_CASE("a tiled transpose copies: no reduction, no arithmetic a note could speak of") {
  const auto t = ops(R"(
constexpr int tile = 32;
__global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float t[tile][tile + 1];
  int x = blockIdx.x * tile + threadIdx.x;
  int y = blockIdx.y * tile + threadIdx.y;
  for (int j = 0; j < tile; j += blockDim.y)
    if (x < cols && y + j < rows) t[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  for (int j = 0; j < tile; j += blockDim.y)
    out[(y + j) * rows + x] = t[threadIdx.x][threadIdx.y + j];
}
int main() { int n = 1000 / 7 % 3; double s = 0; for (int i = 0; i < n; ++i) s += i; return s; }
)");
  CHECK(t == std::set<std::string>{"shared_memory"});  // the host's / % and += are not the kernel's
}

TEST_CASE("an SpMV sums each row; a softmax also calls exp") {
  const auto spmv = ops(R"(
__global__ void spmv(const int* rp, const int* col, const float* val, const float* x, float* y, int rows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.f;
  for (int j = rp[row]; j < rp[row + 1]; ++j) sum += val[j] * x[col[j]];
  y[row] = sum;
})");
  CHECK(has(spmv, "reduction"));
  CHECK_FALSE(has(spmv, "transcendental"));
  CHECK_FALSE(has(spmv, "division"));

  const auto softmax = ops(R"(
__device__ float row_max(const float* r, int n) {
  float m = -INFINITY;
  for (int c = 0; c < n; ++c) m = fmaxf(m, r[c]);
  return m;
}
__global__ void softmax(const float* x, float* y, int n) {
  const float* r = x + blockIdx.x * n;
  const float m = row_max(r, n);
  float s = 0.f;
  for (int c = 0; c < n; ++c) { s += __expf(r[c] - m); }
  for (int c = 0; c < n; ++c) y[blockIdx.x * n + c] = expf(r[c] - m) / s;
})");
  CHECK(has(softmax, "reduction"));
  CHECK(has(softmax, "transcendental"));
  CHECK(has(softmax, "division"));  // by s: a division by a value, whatever its type
}

TEST_CASE("a grid-stride loop's step, a loop counter and an element-wise update are not reductions") {
  const auto t = ops(R"(
__global__ void scale(float* x, float a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] *= a;
  int k = 0;
  while (k < 4) { k += 1; }
  float b = 0.5f;
  x[0] = b / 2.0f;
})");
  CHECK_FALSE(has(t, "reduction"));
  CHECK_FALSE(has(t, "division"));  // only by a floating-point literal
}

TEST_CASE("shared-memory trees, shuffles and atomics reduce; modulo divides; local arrays are per-thread arrays") {
  const auto tree = ops(R"(
__global__ void reduce(const float* in, float* partial, int n) {
  extern __shared__ float s[];
  const unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = s[0];
})");
  CHECK(has(tree, "reduction"));
  CHECK(has(tree, "division"));
  CHECK(has(tree, "shared_memory"));
  CHECK_FALSE(has(tree, "per_thread_array"));

  CHECK(has(ops("__global__ void k(float* o, float v) { v += __shfl_down_sync(0xffffffff, v, 1); o[0] = v; }"), "reduction"));
  CHECK(has(ops("__global__ void k(int* bins, const int* x) { atomicAdd(&bins[x[threadIdx.x]], 1); }"), "reduction"));
  const auto gemm = ops(R"(
template <int TM>
__global__ void __launch_bounds__(256) gemm(const float* a, const float* b, float* c, int k) {
  float acc[TM][TM] = {};
  for (int kk = 0; kk < k; ++kk)
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i][0] += a[kk] * b[i];
  c[threadIdx.x] = acc[0][0];
})");
  CHECK(has(gemm, "per_thread_array"));
  CHECK(has(gemm, "reduction"));  // a dot product accumulates, into an array element
}

TEST_CASE("a file without device code shows nothing; the repository's own programs read as expected") {
  CHECK(ops("int main() { int s = 0; for (int i = 0; i < 10; ++i) s += i % 3; return s / 2; }").empty());
  const fs::path root = fs::path(KBLASTER_FIXTURES_DIR).parent_path().parent_path();
  const auto spmv = ops(kblaster::support::read_file((root / "tests/optimize/programs/spmv_csr.cu").string()));
  CHECK(spmv == std::set<std::string>{"reduction"});
  const auto transpose = ops(kblaster::support::read_file((root / "tests/fixtures/ncu-h100-rewrites/kernels.cu").string()));
  CHECK(has(transpose, "reduction"));  // the file also holds the SpMVs and the reductions
}
