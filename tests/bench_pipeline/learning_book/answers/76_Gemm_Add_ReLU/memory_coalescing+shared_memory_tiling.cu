// 76_Gemm_Add_ReLU (KernelBench level 2): y = relu(gemm(x) + bias), gemm without its own bias.
// applied: memory_coalescing, shared_memory_tiling
// Warp-along-k access carried into tiles: a 32x8 block computes an 8-row x 32-column tile; per 32-wide k-slab each
// warp loads whole 128-byte row segments of x and W (lane = k) into shared memory (W padded to 33), then each thread
// accumulates its output and each warp stores a full 128-byte output row segment.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

constexpr int TK = 32;  // k-slab: one warp-wide, 128-byte row segment
constexpr int TN = 32;  // output columns per block (= lanes)
constexpr int TM = 8;   // output rows per block (= warps)

__global__ void __launch_bounds__(TN * TM) gemm_add_relu_kernel(const float* x, const float* w, const float* bias, float* y, long long m,
                                                                    long long n, long long k) {
  __shared__ float xs[TM][TK];      // xs[r][t]
  __shared__ float ws[TN][TK + 1];  // ws[c][t], padded: ws[lane][kk] is conflict-free
  const int lane = threadIdx.x, wid = threadIdx.y;
  const long long m0 = static_cast<long long>(blockIdx.y) * TM;
  const long long n0 = static_cast<long long>(blockIdx.x) * TN;
  const long long row = m0 + wid, col = n0 + lane;
  float acc = 0.f;
  for (long long t0 = 0; t0 < k; t0 += TK) {
    const long long t = t0 + lane;  // lanes walk k: coalesced
    xs[wid][lane] = (row < m && t < k) ? x[row * k + t] : 0.f;
#pragma unroll
    for (int r = wid; r < TN; r += TM) {
      const long long gc = n0 + r;
      ws[r][lane] = (gc < n && t < k) ? w[gc * k + t] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) acc += xs[wid][kk] * ws[lane][kk];
    __syncthreads();
  }
  if (row < m && col < n) {
    float v = acc + bias[col];
    v = v > 0.f ? v : 0.f;
    y[row * n + col] = v;  // lanes write consecutive columns
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
  const long long rows_per_launch = 65535LL * TM;
  for (long long r0 = 0; r0 < m; r0 += rows_per_launch) {
    const long long mc = m - r0 < rows_per_launch ? m - r0 : rows_per_launch;
    const dim3 grid(static_cast<unsigned>((n + TN - 1) / TN), static_cast<unsigned>((mc + TM - 1) / TM));
    gemm_add_relu_kernel<<<grid, dim3(TN, TM), 0, stream>>>(xp + r0 * k, wp, bp, yp + r0 * n, mc, n, k);
  }
  return static_cast<int>(cudaGetLastError());
}
