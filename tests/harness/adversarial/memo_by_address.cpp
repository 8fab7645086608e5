// memo_by_address: honest while verified, then remembers its answer by the inputs' address and
// replays it: the timed calls used to see the same inputs at the same address every time, so the
// replayed answer was right and the speedup was the memo's. Rotated inputs make it stale.
// kblaster-expect: timing_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <cstring>
#include <vector>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static int calls = 0;
  static const void* key = nullptr;
  static std::vector<float> memo;
  const long long n = in[0].shape[0];
  float* c = static_cast<float*>(out[0].data);
  // Verification makes three calls and then the stress sets two: memoise only after those.
  if (++calls > 5 && key == in[0].data && memo.size() == static_cast<std::size_t>(n)) {
    std::memcpy(c, memo.data(), memo.size() * sizeof(float));
    return 0;
  }
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  key = in[0].data;
  memo.assign(c, c + n);
  return 0;
}
