// 76_Gemm_Add_ReLU (KernelBench level 2): y = relu(gemm(x) + bias), gemm without its own bias.
// applied: shared_memory_tiling, register_blocking
// 64x64 block tile over 16-wide k-slabs staged in shared memory (coalesced loads along k, stored k-major), 256 threads
// each accumulating a 4x4 register block (rows ty+16i, columns tx+16j) from the shared tiles.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

constexpr int BM = 64, BN = 64, BK = 16;  // block tile: BM rows x BN columns, k-slab BK
constexpr int TX = 16, TY = 16;           // 256 threads
constexpr int RM = BM / TY, RN = BN / TX; // 4x4 outputs per thread
constexpr int LOADS = BM * BK / (TX * TY);

__global__ void __launch_bounds__(TX * TY) gemm_add_relu_kernel(const float* x, const float* w, const float* bias, float* y, long long m,
                                                                    long long n, long long k) {
  __shared__ float xs[BK][BM + 1];  // k-major: xs[t][r]
  __shared__ float ws[BK][BN + 1];  // k-major: ws[t][c]
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const long long m0 = static_cast<long long>(blockIdx.y) * BM;
  const long long n0 = static_cast<long long>(blockIdx.x) * BN;
  float acc[RM][RN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < RN; ++j) acc[i][j] = 0.f;
  for (long long t0 = 0; t0 < k; t0 += BK) {
#pragma unroll
    for (int l = 0; l < LOADS; ++l) {
      const int idx = tid + l * TX * TY;
      const int r = idx / BK, kk = idx % BK;  // consecutive threads: consecutive k
      const long long gt = t0 + kk;
      const long long gr = m0 + r, gc = n0 + r;
      xs[kk][r] = (gr < m && gt < k) ? x[gr * k + gt] : 0.f;
      ws[kk][r] = (gc < n && gt < k) ? w[gc * k + gt] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[RM], b[RN];
#pragma unroll
      for (int i = 0; i < RM; ++i) a[i] = xs[kk][ty + TY * i];
#pragma unroll
      for (int j = 0; j < RN; ++j) b[j] = ws[kk][tx + TX * j];
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const long long r = m0 + ty + TY * i;
#pragma unroll
    for (int j = 0; j < RN; ++j) {
      const long long c = n0 + tx + TX * j;
      if (r < m && c < n) {
        float v = acc[i][j] + bias[c];
        v = v > 0.f ? v : 0.f;
        y[r * n + c] = v;
      }
    }
  }
}

static bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

/// Inputs x [m, k], then the parameters (named_parameters() order: the Model's bias, then gemm.weight): weight [n, k] (nn.Linear's
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
    gemm_add_relu_kernel<<<grid, dim3(TX, TY), 0, stream>>>(xp + r0 * k, wp, bp, yp + r0 * n, mc, n, k);
  }
  return static_cast<int>(cudaGetLastError());
}
