// screen_constructor: runs code when the library is loaded (here it could patch the harness before any check).
// kblaster-expect: screening
// kblaster-rule: constructors
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <cstring>

static int patched = 0;
__attribute__((constructor)) static void patch_the_harness() { patched = 1; }

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  std::memcpy(out[0].data, in[0].data, static_cast<size_t>(in[0].shape[0]) * sizeof(float) * patched);
  return 0;
}
