// 21_Sigmoid (KernelBench level 1): y = sigmoid(x), one thread per element. Naive initial kernel for kblaster bench.
// applied: instruction_level_parallelism
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float sigmoid_op(float v) {
  return 1.f / (1.f + expf(-v));
}

// Instruction-level parallelism: each thread owns ILP independent elements (strided by blockDim.x, coalesced),
// issues all ILP loads before using any of them, then runs the ILP independent computations, then the
// stores, so several memory requests and math chains are in flight per thread.
constexpr int ILP = 4;

__global__ void sigmoid_kernel(const float* x, float* y, long long n) {
  const long long base = static_cast<long long>(blockIdx.x) * blockDim.x * ILP + threadIdx.x;
  float v[ILP];
#pragma unroll
  for (int k = 0; k < ILP; ++k) {
    const long long i = base + static_cast<long long>(k) * blockDim.x;
    v[k] = i < n ? x[i] : 0.f;
  }
#pragma unroll
  for (int k = 0; k < ILP; ++k) v[k] = sigmoid_op(v[k]);
#pragma unroll
  for (int k = 0; k < ILP; ++k) {
    const long long i = base + static_cast<long long>(k) * blockDim.x;
    if (i < n) y[i] = v[k];
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
  const long long per_block = static_cast<long long>(block) * ILP;
  const unsigned grid = static_cast<unsigned>((n + per_block - 1) / per_block);
  sigmoid_kernel<<<grid, block, 0, stream>>>(x, y, n);
  return static_cast<int>(cudaGetLastError());
}
