// memo_by_address: honest while verified, then remembers each answer by its inputs' address and
// replays it whenever that address comes again: the timed calls used to see the same inputs at the
// same address every time, and a batch's slots come back at the same addresses batch after batch,
// so a replayed answer was right and the speedup was the memo's. Inputs drawn afresh for every
// call make it stale.
// kblaster-expect: timing_output
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <cstring>
#include <map>
#include <vector>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static int calls = 0;
  static std::map<const void*, std::vector<float>> memo;
  const long long n = in[0].shape[0];
  float* c = static_cast<float*>(out[0].data);
  // Verification makes three calls and then the stress sets two: memoise only after those.
  if (++calls > 5) {
    if (const auto it = memo.find(in[0].data); it != memo.end() && it->second.size() == static_cast<std::size_t>(n)) {
      std::memcpy(c, it->second.data(), it->second.size() * sizeof(float));
      return 0;
    }
  }
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  memo[in[0].data].assign(c, c + n);
  return 0;
}
