// 63_Gemm_ReLU_Divide (KernelBench level 2): y = relu(linear(x)) / 2.0.
// applied: memory_coalescing
// One warp per output element: its 32 lanes stride over k, so every warp-wide load of x's row and of W's row (both
// contiguous along k) reads 32 consecutive floats; a shuffle reduction sums the lanes.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

constexpr int kWarpsPerBlock = 8;  // 256 threads, one output per warp

__global__ void linear_relu_div_kernel(const float* x, const float* w, const float* bias, float* y, long long outputs, long long n,
                                       long long k) {
  const int lane = threadIdx.x & 31;
  const long long i = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (i < outputs) {  // uniform per warp
    const long long row = i / n, col = i % n;
    const float* xr = x + row * k;
    const float* wr = w + col * k;
    float acc = 0.f;
    for (long long t = lane; t < k; t += 32) acc += xr[t] * wr[t];  // lanes read consecutive addresses
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) {
      float v = acc + bias[col];
      v = v > 0.f ? v : 0.f;
      v = v / 2.0f;  // divisor
      y[i] = v;
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
  const int block = 32 * kWarpsPerBlock;
  const unsigned grid = static_cast<unsigned>((outputs + kWarpsPerBlock - 1) / kWarpsPerBlock);
  linear_relu_div_kernel<<<grid, block, 0, stream>>>(xp, wp, bp, yp, outputs, n, k);
  return static_cast<int>(cudaGetLastError());
}
