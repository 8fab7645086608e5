// 63_Gemm_ReLU_Divide (KernelBench level 2): y = relu(linear(x)) / 2.0.
// applied: register_blocking
// Each thread computes a 4x4 block of outputs (rows ty+4i, columns tx+16j) in registers straight from global memory:
// per k step it loads 4 x values and 4 W values and does 16 FMAs.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

constexpr int BX = 16, BY = 4;  // threads per block (x: columns, y: rows)
constexpr int RM = 4, RN = 4;   // outputs per thread: RM rows x RN columns
constexpr int BM = BY * RM, BN = BX * RN;

__global__ void linear_relu_div_kernel(const float* x, const float* w, const float* bias, float* y, long long m, long long n,
                                       long long k) {
  const long long row0 = static_cast<long long>(blockIdx.y) * BM + threadIdx.y;  // rows row0 + BY * i
  const long long col0 = static_cast<long long>(blockIdx.x) * BN + threadIdx.x;  // columns col0 + BX * j
  const float* xr[RM];
  const float* wr[RN];
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const long long r = row0 + BY * i;
    xr[i] = x + (r < m ? r : m - 1) * k;  // out-of-range rows read a valid row; their results are not stored
  }
#pragma unroll
  for (int j = 0; j < RN; ++j) {
    const long long c = col0 + BX * j;
    wr[j] = w + (c < n ? c : n - 1) * k;
  }
  float acc[RM][RN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < RN; ++j) acc[i][j] = 0.f;
  for (long long t = 0; t < k; ++t) {
    float a[RM], b[RN];
#pragma unroll
    for (int i = 0; i < RM; ++i) a[i] = xr[i][t];
#pragma unroll
    for (int j = 0; j < RN; ++j) b[j] = wr[j][t];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RN; ++j) acc[i][j] += a[i] * b[j];
  }
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const long long r = row0 + BY * i;
#pragma unroll
    for (int j = 0; j < RN; ++j) {
      const long long c = col0 + BX * j;
      if (r < m && c < n) {
        float v = acc[i][j] + bias[c];
        v = v > 0.f ? v : 0.f;
        v = v / 2.0f;  // divisor
        y[r * n + c] = v;
      }
    }
  }
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Inputs x [m, k], then the parameters (linear.weight, linear.bias): weight [n, k] (nn.Linear's
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
  // gridDim.y is at most 65535: launch tall problems in bands of rows.
  const long long rows_per_launch = 65535LL * BM;
  for (long long r0 = 0; r0 < m; r0 += rows_per_launch) {
    const long long mc = m - r0 < rows_per_launch ? m - r0 : rows_per_launch;
    const dim3 grid(static_cast<unsigned>((n + BN - 1) / BN), static_cast<unsigned>((mc + BM - 1) / BM));
    linear_relu_div_kernel<<<grid, dim3(BX, BY), 0, stream>>>(xp + r0 * k, wp, bp, yp + r0 * n, mc, n, k);
  }
  return static_cast<int>(cudaGetLastError());
}
