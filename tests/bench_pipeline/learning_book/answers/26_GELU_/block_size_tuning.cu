// 26_GELU_ (KernelBench level 1): y = gelu(x), the exact (erf) form, one thread per element. Naive initial kernel for kblaster bench.
// applied: block_size_tuning
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float gelu_op(float v) {
  return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

__global__ void gelu_kernel(const float* x, float* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = gelu_op(v);
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
  // block_size_tuning: 512 threads per block (was 256). The kernel uses few registers and no shared memory,
  // so 4 blocks of 512 still fill an SM's 2048 threads, with half as many blocks to schedule.
  const int block = 512;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  gelu_kernel<<<grid, block, 0, stream>>>(x, y, n);
  return static_cast<int>(cudaGetLastError());
}
