// equal_answers: a full reduction that stops reading its input once two calls in a row gave the
// same answer, and replays that answer from then on. Inputs rotated between timed calls (what the
// judge did before) leave a sum unchanged, so this passed at several times the honest speed; inputs
// drawn afresh for every call never give two equal answers, and it stays honest.
// kblaster-task: sum_reduction
// kblaster-honest: examples/tasks/sum_reduction/kernel_cpu.cpp
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. It must not be measured faster than the honest kernel.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static bool replay = false;
  static bool have_last = false;
  static float last = 0;
  float* total = static_cast<float*>(out[0].data);
  if (replay) {
    *total = last;
    return 0;
  }
  const long long n = in[0].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  double s = 0;
  for (long long i = 0; i < n; ++i) s += x[i];
  const float answer = static_cast<float>(s);
  if (have_last && answer == last) replay = true;
  last = answer;
  have_last = true;
  *total = answer;
  return 0;
}
