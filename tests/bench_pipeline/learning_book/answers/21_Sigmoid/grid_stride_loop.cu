// 21_Sigmoid (KernelBench level 1): y = sigmoid(x), one thread per element. Naive initial kernel for kblaster bench.
// applied: grid_stride_loop
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__device__ __forceinline__ float sigmoid_op(float v) {
  return 1.f / (1.f + expf(-v));
}

// Grid-stride loop: a fixed grid sized to the GPU walks the whole tensor, whatever n is.
__global__ void sigmoid_kernel(const float* x, float* y, long long n) {
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = sigmoid_op(v);
  }
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
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (sms <= 0) sms = 132;
  // 8 resident blocks of 256 threads fill an SM (2048 threads); never more blocks than the data needs.
  const long long needed = (n + block - 1) / block;
  const long long cap = static_cast<long long>(sms) * 8;
  const unsigned grid = static_cast<unsigned>(needed < cap ? needed : cap);
  sigmoid_kernel<<<grid, block, 0, stream>>>(x, y, n);
  return static_cast<int>(cudaGetLastError());
}
