// naive_softmax.cu: exp(x) / sum(exp(x)) without subtracting the row's maximum. Right on the
// task's inputs, infinite over infinite at larger magnitudes, where the reference stays finite.
// kblaster-expect: stress_large_magnitude
// kblaster-task: row_softmax
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void naive_softmax(const float* x, float* y, long long rows, long long cols) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (long long c = 0; c < cols; ++c) s += __expf(x[r * cols + c]);
  for (long long c = 0; c < cols; ++c) y[r * cols + c] = __expf(x[r * cols + c]) / s;
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  const long long rows = in[0].shape[0], cols = in[0].shape[1];
  naive_softmax<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, stream>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), rows, cols);
  return static_cast<int>(cudaGetLastError());
}
