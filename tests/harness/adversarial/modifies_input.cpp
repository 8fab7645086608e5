// modifies_input: accumulates into its first input, then copies (right answer, inputs clobbered).
// kblaster-expect: input_modified
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  float* a = static_cast<float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0]; ++i) {
    a[i] += b[i];
    c[i] = a[i];
  }
  return 0;
}
