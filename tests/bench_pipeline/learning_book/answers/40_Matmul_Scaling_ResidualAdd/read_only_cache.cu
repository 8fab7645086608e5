// 40_Matmul_Scaling_ResidualAdd (KernelBench level 2): y = linear(x) * 0.5 + linear(x).
// applied: read_only_cache
// Same one-thread-per-output kernel with const __restrict__ pointers and __ldg() loads, so x, W and bias go through
// the read-only (LDG.NC) path.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void linear_scale_residual_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                                             float* __restrict__ y, long long outputs, long long n, long long k) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < outputs) {
    const long long row = i / n, col = i % n;
    float acc = 0.f;
    for (long long t = 0; t < k; ++t) acc += __ldg(&x[row * k + t]) * __ldg(&w[col * k + t]);
    float v = acc + __ldg(&bias[col]);
    v = v * 0.5f + v;  // scaling_factor, then the residual (the clone of linear(x))
    y[i] = v;
  }
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Inputs x [m, k], then the parameters (matmul.weight, matmul.bias): weight [n, k] (nn.Linear's
/// layout) and bias [n], told apart by rank; output y [m, n]; float32, contiguous.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 3 || n_out != 1) return 1;
  for (int a = 0; a < 3; ++a)
    if (!is_f32(in[a])) return 1;
  if (!is_f32(out[0])) return 1;
  const DLTensor& x = in[0];
  const DLTensor& w = in[1].ndim == 2 ? in[1] : in[2];
  const DLTensor& b = in[1].ndim == 2 ? in[2] : in[1];
  if (x.ndim != 2 || w.ndim != 2 || b.ndim != 1 || out[0].ndim != 2) return 1;
  const long long m = x.shape[0], k = x.shape[1], n = w.shape[0];
  if (w.shape[1] != k || b.shape[0] != n || out[0].shape[0] != m || out[0].shape[1] != n) return 1;
  const long long outputs = m * n;
  if (outputs == 0) return 0;
  const float* xp = static_cast<const float*>(x.data);
  const float* wp = static_cast<const float*>(w.data);
  const float* bp = static_cast<const float*>(b.data);
  float* yp = static_cast<float*>(out[0].data);
  const int block = 256;
  const unsigned grid = static_cast<unsigned>((outputs + block - 1) / block);
  linear_scale_residual_kernel<<<grid, block, 0, stream>>>(xp, wp, bp, yp, outputs, n, k);
  return static_cast<int>(cudaGetLastError());
}
