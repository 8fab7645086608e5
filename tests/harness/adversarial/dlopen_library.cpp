// dlopen_library: loads a library at run time to get around the import check.
// kblaster-expect: forbidden_library
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <dlfcn.h>

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  void* lib = dlopen("libcublas.so", RTLD_NOW);
  (void)lib;
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < in[0].shape[0]; ++i) c[i] = a[i] + b[i];
  return 0;
}
