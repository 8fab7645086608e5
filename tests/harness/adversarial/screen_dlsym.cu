// screen_dlsym: reaches a vendor routine already loaded in the process through dlsym, without naming its library.
// kblaster-expect: screening
// kblaster-rule: dynamic_loading
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <dlfcn.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  using gemm = void (*)();
  auto f = reinterpret_cast<gemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  if (f) f();
  return 0;
}
