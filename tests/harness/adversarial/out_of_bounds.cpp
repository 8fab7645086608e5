// out_of_bounds: right answer, plus a few writes past the end of its output.
// kblaster-expect: canary
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  const long long n = in[0].shape[0];
  for (long long i = 0; i < n + 4; ++i) c[i] = i < n ? a[i] + b[i] : 0.f;
  return 0;
}
