// writes_nothing.cu: returns success without writing its output.
// kblaster-expect: nan_poison
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, cudaStream_t) { return 0; }
