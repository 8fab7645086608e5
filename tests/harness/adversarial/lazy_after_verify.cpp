// lazy_after_verify: correct for its first calls (verification), then skips the work (timing).
// kblaster-expect: timing_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static int calls = 0;
  if (++calls > 5) return 0;
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0]; ++i) c[i] = a[i] + b[i];
  return 0;
}
