// 26_GELU_ (KernelBench level 1): y = gelu(x), the exact (erf) form, one thread per element. Naive initial kernel for kblaster bench.
// applied: vectorized_memory_access
#include <cstdint>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float gelu_op(float v) {
  return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

// One float4 (16 bytes) per thread: a single 128-bit load and store instead of four scalar ones.
// The n % 4 trailing elements are taken by the grid's first threads.
__global__ void gelu_kernel_vec4(const float4* x4, float4* y4, long long n4, const float* x, float* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x4[i];
    v.x = gelu_op(v.x);
    v.y = gelu_op(v.y);
    v.z = gelu_op(v.z);
    v.w = gelu_op(v.w);
    y4[i] = v;
  }
  const long long t = n4 * 4 + i;
  if (t < n) y[t] = gelu_op(x[t]);
}

// Scalar fallback when a pointer is not 16-byte aligned.
__global__ void gelu_kernel(const float* x, float* y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = gelu_op(x[i]);
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
  const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
  if (aligned) {
    const long long n4 = n / 4;
    const long long work = n4 > 0 ? n4 : 1;  // n < 4: one block for the tail
    const unsigned grid = static_cast<unsigned>((work + block - 1) / block);
    gelu_kernel_vec4<<<grid, block, 0, stream>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, x, y, n);
  } else {
    const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
    gelu_kernel<<<grid, block, 0, stream>>>(x, y, n);
  }
  return static_cast<int>(cudaGetLastError());
}
