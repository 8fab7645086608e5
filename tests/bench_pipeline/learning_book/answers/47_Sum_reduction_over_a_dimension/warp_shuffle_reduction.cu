// 47_Sum_reduction_over_a_dimension (KernelBench level 1): torch.sum(x, dim=1, keepdim=True) over dim 1 of x [outer, reduced, inner...].
// applied: warp_shuffle_reduction
// Reduction over dim 1 of x [outer, reduced, inner...] with one warp per output: the lanes split dim 1
// (r = lane, lane + 32, ...) and combine their partial results with __shfl_xor_sync; lane 0 writes. The 8 warps
// of a block take 8 consecutive outputs, so their strided loads share 32-byte sectors in L1.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// The reduction: sum over dim 1, starting from 0.
__device__ __forceinline__ float red_init() { return 0.f; }
__device__ __forceinline__ float red_op(float a, float b) { return a + b; }

__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = red_op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void sum_dim1_kernel(const float* x, float* y, long long outputs, long long reduced, long long inner) {
  const long long o = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (o >= outputs) return;  // whole warp
  const long long b = o / inner, j = o % inner;
  const float* xb = x + b * reduced * inner + j;
  float acc = red_init();
  for (long long r = lane; r < reduced; r += 32) acc = red_op(acc, xb[r * inner]);
  acc = warp_reduce(acc);
  if (lane == 0) y[o] = acc;
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
  const int block = 256;
  const long long warps_per_block = block / 32;
  const unsigned grid = static_cast<unsigned>((outputs + warps_per_block - 1) / warps_per_block);
  sum_dim1_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), outputs, reduced, inner);
  return static_cast<int>(cudaGetLastError());
}
