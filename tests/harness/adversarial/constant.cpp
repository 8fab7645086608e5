// constant: fills the output with one value.
// kblaster-expect: constant_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0]; ++i) c[i] = 0.25f;
  return 0;
}
