// 36_RMSNorm_ (KernelBench level 1): y = x / sqrt(mean(x^2 over dim 1) + 1e-5) for x [batch,
// applied: grid_size_tuning
// RMSNorm over dim 1: naive per-position mapping with a grid-stride loop and a grid sized from the SM
// count instead of a fixed 256-thread block.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void rms_norm_kernel(const float* x, float* y, long long positions, long long features, long long inner) {
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < positions;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long b = p / inner, j = p % inner;
    const long long base = b * features * inner + j;
    float s = 0.f;
    for (long long f = 0; f < features; ++f) {
      const float v = x[base + f * inner];
      s += v * v;
    }
    const float rms = sqrtf(s / static_cast<float>(features) + 1e-5f);  // eps: the problem's default
    for (long long f = 0; f < features; ++f) y[base + f * inner] = x[base + f * inner] / rms;
  }
}

static int sm_count() {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
      sms = 132;
  }
  return sms;
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
  // Grid sized from the SM count: shrink the block (down to one warp) until there are at least 2 blocks per
  // SM, so that small problems still reach every SM; cap large grids at 8 blocks per SM with a grid-stride
  // loop so that the last wave is not mostly empty.
  const int sms = sm_count();
  int block = 256;
  while (block > 32 && (positions + block - 1) / block < 2LL * sms) block /= 2;
  long long blocks = (positions + block - 1) / block;
  const long long max_blocks = 8LL * sms * (256 / block);
  if (blocks > max_blocks) blocks = max_blocks;
  const unsigned grid = static_cast<unsigned>(blocks);
  rms_norm_kernel<<<grid, block, 0, stream>>>(static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data),
                                              positions, features, inner);
  return static_cast<int>(cudaGetLastError());
}
