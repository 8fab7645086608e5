// crash: dereferences a null pointer (SIGSEGV). The harness dies; the engine must survive it,
// report "crash" and start a fresh harness. Written for KernelBlaster's tests.
// kblaster-expect: crash
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor* out, int, void*) {
  volatile float* p = nullptr;
  *p = 1.f;
  static_cast<float*>(out[0].data)[0] = *p;
  return 0;
}
