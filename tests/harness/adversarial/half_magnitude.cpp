// half_magnitude: outputs half the answer; every element is within atol because outputs are ~1e-6.
// kblaster-expect: magnitude
// kblaster-task: tiny_outputs
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0]; ++i) c[i] = 0.5f * (a[i] + b[i]) * 1e-6f;
  return 0;
}
