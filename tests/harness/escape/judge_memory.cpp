// judge_memory: reaches into the judge, the process that holds the expected outputs and writes
// the verdict (this candidate's parent): reads its memory through /proc/PPID/mem and
// process_vm_readv, and attaches to it with ptrace.
// kblaster-expect: contained
#include "escape_probe.h"

#include <dlpack/dlpack.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  const pid_t judge = getppid();
  int hit = 0;
  const int fd = open(("/proc/" + std::to_string(judge) + "/mem").c_str(), O_RDONLY);
  if (fd >= 0) {
    hit = 1;
    close(fd);
  }
  char buf[64];
  static char probe_byte = 1;
  iovec local{buf, sizeof(buf)}, remote{&probe_byte, 1};  // the same address in the judge: mapped or not, it answers
  if (process_vm_readv(judge, &local, 1, &remote, 1, 0) > 0) hit = 1;
  if (ptrace(PTRACE_ATTACH, judge, nullptr, nullptr) == 0) {
    hit = 1;
    ptrace(PTRACE_DETACH, judge, nullptr, nullptr);
  }
  return hit ? escape::kEscaped : 0;
}
