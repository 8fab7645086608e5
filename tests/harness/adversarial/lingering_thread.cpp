// lingering_thread: computes the right answer, and leaves a thread behind that writes nothing
// (yet): a thread that outlives the call could load the machine while the reference is timed, or
// write later. The judge counts the runner's threads from outside.
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
  for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  std::thread([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }).detach();
  return 0;
}
