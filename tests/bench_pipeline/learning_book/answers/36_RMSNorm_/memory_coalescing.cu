// 36_RMSNorm_ (KernelBench level 1): y = x / sqrt(mean(x^2 over dim 1) + 1e-5) for x [batch,
// applied: memory_coalescing
// RMSNorm over dim 1 (x [batch, features, inner...], y = x / sqrt(mean over features of x^2 + 1e-5)).
// Coalescing: threads map to the contiguous inner index within one batch (2-D grid: x over inner, y over
// batch), so every warp-wide load and store of a feature plane is one contiguous run; no div/mod per thread.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// blockIdx.y (strided by gridDim.y) picks the batch, threadIdx.x the contiguous inner index j: each warp
// reads 32 consecutive floats of one feature plane, never straddling two batches, for every feature.
__global__ void rms_norm_kernel(const float* x, float* y, long long batch, long long features, long long inner) {
  const long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= inner) return;
  for (long long b = blockIdx.y; b < batch; b += gridDim.y) {
    const float* xb = x + b * features * inner + j;
    float* yb = y + b * features * inner + j;
    float s = 0.f;
    for (long long f = 0; f < features; ++f) {
      const float v = xb[f * inner];
      s += v * v;
    }
    const float rms = sqrtf(s / static_cast<float>(features) + 1e-5f);  // eps: the problem's default
    for (long long f = 0; f < features; ++f) yb[f * inner] = xb[f * inner] / rms;
  }
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
  const unsigned grid_x = static_cast<unsigned>((inner + block - 1) / block);
  const unsigned grid_y = static_cast<unsigned>(batch < 65535 ? batch : 65535);
  rms_norm_kernel<<<dim3(grid_x, grid_y), block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), batch, features, inner);
  return static_cast<int>(cudaGetLastError());
}
