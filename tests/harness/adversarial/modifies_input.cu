// modifies_input.cu: accumulates into its first input, then copies.
// kblaster-expect: input_modified
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void add_in_place(float* a, const float* b, float* c, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) {
    a[i] += b[i];
    c[i] = a[i];
  }
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  const long long n = in[0].shape[0];
  add_in_place<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(static_cast<float*>(in[0].data),
      static_cast<const float*>(in[1].data), static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
