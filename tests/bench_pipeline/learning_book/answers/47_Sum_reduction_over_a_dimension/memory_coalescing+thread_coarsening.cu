// 47_Sum_reduction_over_a_dimension (KernelBench level 1): torch.sum(x, dim=1, keepdim=True) over dim 1 of x [outer, reduced, inner...].
// applied: memory_coalescing, thread_coarsening
// Reduction over dim 1 of x [outer, reduced, inner...]: coalesced 2-D mapping (threadIdx.x over the
// contiguous inner index, grid y over the outer index) plus thread coarsening: each thread computes 4 inner
// positions strided by blockDim.x (warp-wide loads stay contiguous) with 4 independent accumulators.
// 64 threads per block, so a block still covers 256 inner positions.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// The reduction: sum over dim 1, starting from 0.
__device__ __forceinline__ float red_init() { return 0.f; }
__device__ __forceinline__ float red_op(float a, float b) { return a + b; }

constexpr int kCoarsen = 4;

__global__ void sum_dim1_kernel(const float* x, float* y, long long outer, long long reduced, long long inner) {
  const long long j0 = static_cast<long long>(blockIdx.x) * blockDim.x * kCoarsen + threadIdx.x;
  for (long long b = blockIdx.y; b < outer; b += gridDim.y) {
    const float* xb = x + b * reduced * inner;
    float acc[kCoarsen];
#pragma unroll
    for (int k = 0; k < kCoarsen; ++k) acc[k] = red_init();
    for (long long r = 0; r < reduced; ++r) {
      const float* xr = xb + r * inner;
#pragma unroll
      for (int k = 0; k < kCoarsen; ++k) {
        const long long j = j0 + k * blockDim.x;
        if (j < inner) acc[k] = red_op(acc[k], xr[j]);
      }
    }
#pragma unroll
    for (int k = 0; k < kCoarsen; ++k) {
      const long long j = j0 + k * blockDim.x;
      if (j < inner) y[b * inner + j] = acc[k];
    }
  }
}

static long long numel(const DLTensor& t) {
  long long n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Input x [outer, reduced, ...] (at least 2-D; the problem reduces dim 1); output y [outer, 1, ...] (keepdim); float32, contiguous.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim < 2 || !is_f32(in[0]) || !is_f32(out[0])) return 1;
  long long inner = 1;
  for (int d = 2; d < in[0].ndim; ++d) inner *= in[0].shape[d];
  const long long outer = in[0].shape[0], reduced = in[0].shape[1];
  const long long outputs = outer * inner;
  if (numel(out[0]) != outputs || out[0].ndim != in[0].ndim) return 1;
  if (outputs == 0) return 0;
  const int block = 64;
  const long long per_block = static_cast<long long>(block) * kCoarsen;
  const unsigned grid_x = static_cast<unsigned>((inner + per_block - 1) / per_block);
  const unsigned grid_y = static_cast<unsigned>(outer < 65535 ? outer : 65535);
  sum_dim1_kernel<<<dim3(grid_x, grid_y), block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), outer, reduced, inner);
  return static_cast<int>(cudaGetLastError());
}
