// swaps_output_pointer: points the output descriptor at its own buffer instead of writing in place.
// kblaster-expect: descriptor_changed
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <vector>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static std::vector<float> mine;
  const long long n = in[0].shape[0];
  mine.resize(static_cast<size_t>(n));
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  for (long long i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = a[i] + b[i];
  // Also fill the real output so that only the descriptor check can catch it.
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < n; ++i) c[i] = mine[static_cast<size_t>(i)];
  out[0].data = mine.data();
  return 0;
}
