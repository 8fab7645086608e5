// screen_mprotect: makes a page of the harness writable and executable (to rewrite its timer).
// kblaster-expect: screening
// kblaster-rule: memory_protection
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <sys/mman.h>
#include <cstdint>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  const auto page = reinterpret_cast<std::uintptr_t>(&kb_forward) & ~std::uintptr_t{4095};
  return mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
}
