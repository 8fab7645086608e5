// no_entry_point: exports no kb_forward.
// kblaster-expect: load
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

extern "C" int forward(const DLTensor*, int, DLTensor*, int, void*) { return 0; }
