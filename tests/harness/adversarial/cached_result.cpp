// cached_result: computes on the first call and replays that answer afterwards.
// kblaster-expect: cached_result
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <cstring>
#include <vector>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  static std::vector<float> cache;
  const long long n = in[0].shape[0];
  float* c = static_cast<float*>(out[0].data);
  if (cache.empty()) {
    const float* a = static_cast<const float*>(in[0].data);
    const float* b = static_cast<const float*>(in[1].data);
    cache.resize(static_cast<size_t>(n));
    for (long long i = 0; i < n; ++i) cache[static_cast<size_t>(i)] = a[i] + b[i];
  }
  std::memcpy(c, cache.data(), sizeof(float) * static_cast<size_t>(n));
  return 0;
}
