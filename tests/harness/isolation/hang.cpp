// hang: never returns. The engine's watchdog must kill the harness and report "hang".
// Written for KernelBlaster's tests.
// kblaster-expect: hang
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  volatile bool forever = true;
  while (forever) {
  }
  return 0;
}
