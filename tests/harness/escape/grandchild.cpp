// grandchild: leaves a process behind. A double fork with setsid() puts it in a new session and
// process group, out of reach of a kill of the harness's group; it sleeps under a name
// harness_check looks for once the harness has ended.
// kblaster-expect: contained
#include "escape_probe.h"

#include <dlpack/dlpack.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      execl("/bin/sleep", "kblaster-escapee", "600", static_cast<char*>(nullptr));
      _exit(1);
    }
    _exit(0);
  }
  if (child > 0) waitpid(child, nullptr, 0);
  return 0;
}
