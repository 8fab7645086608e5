// abort: calls abort() (SIGABRT), as a failed assert would. Written for KernelBlaster's tests.
// kblaster-expect: abort
#include <dlpack/dlpack.h>

#include <cstdlib>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) { std::abort(); }
