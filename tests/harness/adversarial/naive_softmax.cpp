// naive_softmax: exp(x) / sum(exp(x)) without subtracting the row's maximum. Right on the task's
// inputs (|x| up to about 15), infinite over infinite at larger magnitudes, where the reference
// (and any careful kernel) stays finite. Only the stress inputs see it.
// kblaster-expect: stress_large_magnitude
// kblaster-task: row_softmax
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <cmath>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const long long rows = in[0].shape[0], cols = in[0].shape[1];
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (long long r = 0; r < rows; ++r) {
    float s = 0.f;
    for (long long c = 0; c < cols; ++c) s += std::exp(x[r * cols + c]);
    for (long long c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[r * cols + c]) / s;
  }
  return 0;
}
