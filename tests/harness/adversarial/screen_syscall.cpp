// screen_syscall: makes a raw system call (here getppid, the first step to signalling the engine).
// kblaster-expect: screening
// kblaster-rule: raw_syscalls
// kblaster-task: vector_add
// Adversarial candidate; written for KernelBlaster's tests. The static screening must refuse it
// before it runs, naming the import and the rule.
#include <dlpack/dlpack.h>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  return syscall(SYS_getppid) > 0 ? 0 : 1;
}
