// zeros.cu: zeroes the output.
// kblaster-expect: constant_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  return static_cast<int>(cudaMemsetAsync(out[0].data, 0, sizeof(float) * in[0].shape[0], stream));
}
