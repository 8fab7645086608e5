// 40_Matmul_Scaling_ResidualAdd (KernelBench level 2): y = linear(x) * 0.5 + linear(x).
// applied: vectorized_memory_access
// Same one-thread-per-output kernel, but the dot product reads x's and W's rows as float4 along k when k % 4 == 0 and
// both pointers are 16-byte aligned (scalar loop otherwise and for the tail), same summation order.
#include <cuda_runtime.h>
#include <cstdint>
#include <dlpack/dlpack.h>

__global__ void linear_scale_residual_kernel(const float* x, const float* w, const float* bias, float* y, long long outputs, long long n,
                                             long long k, int vec4) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < outputs) {
    const long long row = i / n, col = i % n;
    const float* xr = x + row * k;
    const float* wr = w + col * k;
    float acc = 0.f;
    long long t = 0;
    if (vec4) {  // every row starts 16-byte aligned
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const float4* w4 = reinterpret_cast<const float4*>(wr);
      const long long k4 = k >> 2;
      for (long long q = 0; q < k4; ++q) {
        const float4 a = x4[q], b = w4[q];
        acc += a.x * b.x;
        acc += a.y * b.y;
        acc += a.z * b.z;
        acc += a.w * b.w;
      }
      t = k4 << 2;
    }
    for (; t < k; ++t) acc += xr[t] * wr[t];
    float v = acc + bias[col];
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
  const int vec4 = (k % 4 == 0 && (reinterpret_cast<uintptr_t>(xp) & 15) == 0 && (reinterpret_cast<uintptr_t>(wp) & 15) == 0) ? 1 : 0;
  const int block = 256;
  const unsigned grid = static_cast<unsigned>((outputs + block - 1) / block);
  linear_scale_residual_kernel<<<grid, block, 0, stream>>>(xp, wp, bp, yp, outputs, n, k, vec4);
  return static_cast<int>(cudaGetLastError());
}
