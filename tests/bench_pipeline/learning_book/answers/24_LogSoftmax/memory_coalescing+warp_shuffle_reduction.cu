// 24_LogSoftmax (KernelBench level 1): log_softmax over dim 1 of a [rows, cols] matrix. Naive initial kernel for
// applied: memory_coalescing, warp_shuffle_reduction
// log_softmax over dim 1 of a [rows, cols] matrix. Row statistics: one block per row (consecutive threads
// read consecutive elements), with the max and the sum of exp(x - max) reduced by warp shuffles plus one
// 32-entry shared array per block instead of a shared-memory tree. One thread per element writes the output.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float out_op(float v, float m, float s) { return v - m - logf(s); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide reductions: each warp reduces with shuffles, warp results meet in a 32-entry shared array
// and the first warp reduces those; the result is broadcast through shared memory.
__device__ __forceinline__ float block_max(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_max(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? sh[lane] : -INFINITY;
    v = warp_max(v);
    if (lane == 0) sh[32] = v;
  }
  __syncthreads();
  v = sh[32];
  __syncthreads();
  return v;
}

__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? sh[lane] : 0.f;
    v = warp_sum(v);
    if (lane == 0) sh[32] = v;
  }
  __syncthreads();
  v = sh[32];
  __syncthreads();
  return v;
}

// One block per row (blockDim.x a multiple of 32): consecutive threads read consecutive columns.
__global__ void row_stats_kernel(const float* x, float* row_max, float* row_sum, long long rows, long long cols) {
  __shared__ float sh[33];
  const long long r = blockIdx.x;
  const float* xr = x + r * cols;
  float m = -INFINITY;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = block_max(m, sh);
  float s = 0.f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
  s = block_sum(s, sh);
  if (threadIdx.x == 0) {
    row_max[r] = m;
    row_sum[r] = s;
  }
}

__global__ void log_softmax_write_kernel(const float* x, const float* row_max, const float* row_sum, float* y, long long n, long long cols) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const long long r = i / cols;
    y[i] = out_op(x[i], row_max[r], row_sum[r]);
  }
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Input x [rows, cols]; output y [rows, cols]; float32, contiguous. Row statistics live in a
/// stream-ordered scratch buffer.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2 || out[0].ndim != 2 || !is_f32(in[0]) || !is_f32(out[0])) return 1;
  const long long rows = in[0].shape[0], cols = in[0].shape[1];
  if (out[0].shape[0] != rows || out[0].shape[1] != cols) return 1;
  if (rows == 0 || cols == 0) return 0;
  float* stats = nullptr;
  cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&stats), 2 * rows * sizeof(float), stream);
  if (err != cudaSuccess) return static_cast<int>(err);
  const float* x = static_cast<const float*>(in[0].data);
  const int block = 256;
  const unsigned row_grid = static_cast<unsigned>(rows);  // one block per row
  row_stats_kernel<<<row_grid, block, 0, stream>>>(x, stats, stats + rows, rows, cols);
  const long long n = rows * cols;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  log_softmax_write_kernel<<<grid, block, 0, stream>>>(x, stats, stats + rows, static_cast<float*>(out[0].data), n, cols);
  err = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(stats, stream);
  return static_cast<int>(err != cudaSuccess ? err : freed);
}
