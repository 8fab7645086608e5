// 36_RMSNorm_ (KernelBench level 1): y = x / sqrt(mean(x^2 over dim 1) + 1e-5) for x [batch,
// applied: warp_shuffle_reduction
// RMSNorm over dim 1 (x [batch, features, inner...], y = x / sqrt(mean over features of x^2 + 1e-5)).
// The per-position reduction over the features is done by a whole warp with shuffles instead of one thread.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp per (batch, position): the lanes split the features (f = lane, lane + 32, ...), the sum of
// squares is reduced with __shfl_xor_sync so every lane holds it, then the lanes write their features.
// The 8 warps of a block take 8 consecutive positions so that their strided loads share sectors in L1.
__global__ void rms_norm_kernel(const float* x, float* y, long long positions, long long features, long long inner) {
  const long long p = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (p >= positions) return;  // whole warp
  const long long b = p / inner, j = p % inner;
  const long long base = b * features * inner + j;
  float s = 0.f;
  for (long long f = lane; f < features; f += 32) {
    const float v = x[base + f * inner];
    s += v * v;
  }
  s = warp_sum(s);
  const float rms = sqrtf(s / static_cast<float>(features) + 1e-5f);  // eps: the problem's default
  for (long long f = lane; f < features; f += 32) y[base + f * inner] = x[base + f * inner] / rms;
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Input x [batch, features, ...] (at least 2-D); output y of the same shape; float32, contiguous.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim < 2 || out[0].ndim != in[0].ndim || !is_f32(in[0]) || !is_f32(out[0]))
    return 1;
  long long inner = 1;
  for (int d = 0; d < in[0].ndim; ++d) {
    if (out[0].shape[d] != in[0].shape[d]) return 1;
    if (d >= 2) inner *= in[0].shape[d];
  }
  const long long batch = in[0].shape[0], features = in[0].shape[1];
  const long long positions = batch * inner;
  if (positions == 0 || features == 0) return 0;
  const int block = 256;
  const long long warps_per_block = block / 32;
  const unsigned grid = static_cast<unsigned>((positions + warps_per_block - 1) / warps_per_block);
  rms_norm_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), positions, features, inner);
  return static_cast<int>(cudaGetLastError());
}
