// signals: kills the engine. It scans /proc for the process that started the harness
// (harness_check here, kblaster in the daemon) and sends it SIGKILL, then kills its own parent.
// kblaster-expect: contained
#include "escape_probe.h"

#include <dirent.h>
#include <dlpack/dlpack.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  int hit = 0;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const int pid = std::atoi(e->d_name);
      if (pid <= 1 || pid == getpid()) continue;
      std::ifstream in(std::string("/proc/") + e->d_name + "/comm");
      std::string comm;
      std::getline(in, comm);
      if (comm == "harness_check" || comm == "kblaster" || comm == "test_engine") hit |= kill(pid, SIGKILL) == 0;
    }
    closedir(d);
  }
  kill(getppid(), SIGKILL);  // in the sandbox: its own init, which takes the harness with it
  return hit ? escape::kEscaped : 0;
}
