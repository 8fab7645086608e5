// side_thread: returns at once and does the work on a detached thread (the CPU's 'other stream').
// kblaster-expect: side_work
// kblaster-task: vector_add
// kblaster-screening: off
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <chrono>
#include <thread>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  const long long n = in[0].shape[0];
  std::thread([=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  }).detach();
  return 0;
}
