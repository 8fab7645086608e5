// screen_fopen: writes a file outside its scratch folder (the build cache).
// kblaster-expect: screening
// kblaster-rule: file_system
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <cstdio>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  if (std::FILE* f = std::fopen("/tmp/kblaster-poisoned-cache.so", "w")) std::fclose(f);
  return 0;
}
