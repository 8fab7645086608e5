// signals: kills the engine and the judge. It scans /proc for the process that started the
// harness (harness_check here, kblaster in the daemon) and for the judge (kblaster-harness) and
// sends them SIGKILL, then kills its own parent (the judge again).
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
      if (comm == "harness_check" || comm == "kblaster" || comm == "test_engine" || comm == "kblaster-harness") hit |= kill(pid, SIGKILL) == 0;
    }
    closedir(d);
  }
  hit |= kill(getppid(), SIGKILL) == 0;  // the judge, whose child this runner is
  return hit ? escape::kEscaped : 0;
}
