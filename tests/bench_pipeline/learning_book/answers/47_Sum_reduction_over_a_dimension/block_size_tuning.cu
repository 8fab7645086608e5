// 47_Sum_reduction_over_a_dimension (KernelBench level 1): torch.sum(x, dim=1, keepdim=True) over dim 1 of x [outer, reduced, inner...].
// applied: block_size_tuning
// Reduction over dim 1 of x [outer, reduced, inner...], one thread per output (naive mapping) with a retuned
// block of 128 threads (16 resident blocks per SM): twice as many blocks as 256, so the few thousand
// latency-bound output threads spread over more SMs at the same occupancy.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// The reduction: sum over dim 1, starting from 0.
__device__ __forceinline__ float red_init() { return 0.f; }
__device__ __forceinline__ float red_op(float a, float b) { return a + b; }

__global__ void __launch_bounds__(128) sum_dim1_kernel(const float* x, float* y, long long outputs, long long reduced, long long inner) {
  const long long o = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o < outputs) {
    const long long b = o / inner, j = o % inner;
    float acc = red_init();
    for (long long r = 0; r < reduced; ++r) acc = red_op(acc, x[(b * reduced + r) * inner + j]);
    y[o] = acc;
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
  const int block = 128;
  const unsigned grid = static_cast<unsigned>((outputs + block - 1) / block);
  sum_dim1_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), outputs, reduced, inner);
  return static_cast<int>(cudaGetLastError());
}
