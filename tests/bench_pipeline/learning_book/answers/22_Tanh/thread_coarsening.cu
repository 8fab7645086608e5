// 22_Tanh (KernelBench level 1): y = tanh(x), one thread per element. Naive initial kernel for kblaster bench.
// applied: thread_coarsening
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float tanh_op(float v) {
  return tanhf(v);
}

// Thread coarsening: each thread handles COARSEN elements, strided by blockDim.x inside its block's
// tile of blockDim.x * COARSEN elements, so every warp access stays coalesced; the grid is COARSEN x smaller.
constexpr int COARSEN = 4;

__global__ void tanh_kernel(const float* x, float* y, long long n) {
  const long long base = static_cast<long long>(blockIdx.x) * blockDim.x * COARSEN + threadIdx.x;
#pragma unroll
  for (int c = 0; c < COARSEN; ++c) {
    const long long i = base + static_cast<long long>(c) * blockDim.x;
    if (i < n) {
      const float v = x[i];
      y[i] = tanh_op(v);
    }
  }
}

// Elements of a tensor; shapes are int64, and KernelBench's reach billions of elements.
static long long numel(const DLTensor& t) {
  long long n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Input x (any shape); output y of the same shape; float32, contiguous.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || !is_f32(in[0]) || !is_f32(out[0])) return 1;
  const long long n = numel(in[0]);
  if (numel(out[0]) != n) return 1;
  if (n == 0) return 0;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int block = 256;
  const long long per_block = static_cast<long long>(block) * COARSEN;
  const unsigned grid = static_cast<unsigned>((n + per_block - 1) / per_block);
  tanh_kernel<<<grid, block, 0, stream>>>(x, y, n);
  return static_cast<int>(cudaGetLastError());
}
