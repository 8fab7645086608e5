// 49_Max_reduction_over_a_dimension (KernelBench level 1): torch.max(x, dim=1)[0] over dim 1 of x [outer, reduced, inner...].
// applied: thread_coarsening
// Reduction over dim 1 of x [outer, reduced, inner...] with thread coarsening: each thread computes 4 outputs
// strided by blockDim.x within its block's tile of 4 * blockDim.x outputs (so every warp-wide load stays
// contiguous), keeping 4 independent accumulators in the loop over dim 1. 64 threads per block, so a block
// still covers 256 outputs and the grid keeps its number of blocks while the thread count drops 4x.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// The reduction: max over dim 1, starting from -inf.
__device__ __forceinline__ float red_init() { return -INFINITY; }
__device__ __forceinline__ float red_op(float a, float b) { return fmaxf(a, b); }

constexpr int kCoarsen = 4;

__global__ void max_dim1_kernel(const float* x, float* y, long long outputs, long long reduced, long long inner) {
  const long long tile = static_cast<long long>(blockIdx.x) * blockDim.x * kCoarsen;
  long long base[kCoarsen];
  bool ok[kCoarsen];
  float acc[kCoarsen];
#pragma unroll
  for (int k = 0; k < kCoarsen; ++k) {
    const long long o = tile + k * blockDim.x + threadIdx.x;
    ok[k] = o < outputs;
    const long long b = o / inner, j = o % inner;
    base[k] = b * reduced * inner + j;
    acc[k] = red_init();
  }
  for (long long r = 0; r < reduced; ++r) {
#pragma unroll
    for (int k = 0; k < kCoarsen; ++k)
      if (ok[k]) acc[k] = red_op(acc[k], x[base[k] + r * inner]);
  }
#pragma unroll
  for (int k = 0; k < kCoarsen; ++k)
    if (ok[k]) y[tile + k * blockDim.x + threadIdx.x] = acc[k];
}

static long long numel(const DLTensor& t) {
  long long n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Input x [outer, reduced, ...] (at least 2-D; the problem reduces dim 1); output y [outer, ...] (dim 1 dropped); float32, contiguous.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim < 2 || !is_f32(in[0]) || !is_f32(out[0])) return 1;
  long long inner = 1;
  for (int d = 2; d < in[0].ndim; ++d) inner *= in[0].shape[d];
  const long long outer = in[0].shape[0], reduced = in[0].shape[1];
  const long long outputs = outer * inner;
  if (numel(out[0]) != outputs || out[0].ndim != in[0].ndim - 1) return 1;
  if (outputs == 0) return 0;
  const int block = 64;
  const long long per_block = static_cast<long long>(block) * kCoarsen;
  const unsigned grid = static_cast<unsigned>((outputs + per_block - 1) / per_block);
  max_dim1_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), outputs, reduced, inner);
  return static_cast<int>(cudaGetLastError());
}
