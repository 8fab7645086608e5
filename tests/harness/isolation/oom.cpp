// oom: an allocation that cannot be satisfied (1 PiB); std::bad_alloc escapes the C ABI. The
// harness reports "out_of_memory" (and, had it died of it, the engine would have too), without
// really exhausting the machine's memory. Written for KernelBlaster's tests.
// kblaster-expect: out_of_memory
#include <dlpack/dlpack.h>

#include <cstddef>
#include <new>

extern "C" int kb_forward(const DLTensor*, int, DLTensor* out, int, void*) {
  volatile std::size_t huge = std::size_t(1) << 50;
  auto* p = static_cast<float*>(::operator new(huge));
  p[0] = 1.f;
  static_cast<float*>(out[0].data)[0] = p[0];
  return 0;
}
