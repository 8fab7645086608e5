// screen_getenv: reads the model API key from its environment.
// kblaster-expect: screening
// kblaster-rule: environment
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <cstdlib>
#include <cstring>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  const char* key = std::getenv("OPENAI_API_KEY");
  return key && std::strlen(key) > 0 ? 0 : 1;
}
