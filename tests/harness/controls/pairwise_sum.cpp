// pairwise_sum: the sum in eight independent partial sums (more accurate and faster than one
// running sum). A legitimate candidate for the CPU path: the harness must pass it. Written for
// KernelBlaster's tests.
// kblaster-task: sum_reduction
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const long long n = in[0].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  double partial[8] = {};
  long long i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) partial[k] += x[i + k];
  for (; i < n; ++i) partial[0] += x[i];
  double s = 0;
  for (double p : partial) s += p;
  *static_cast<float*>(out[0].data) = static_cast<float>(s);
  return 0;
}
