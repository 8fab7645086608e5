// partial: computes only the first half of the output.
// kblaster-expect: partial_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0] / 2; ++i) c[i] = a[i] + b[i];
  return 0;
}
