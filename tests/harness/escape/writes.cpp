// writes: writes files outside its scratch folder: into /tmp, beside its own shared object (the
// build cache, where a later candidate's build would be served from), into the real home, and
// into the task's folder.
// kblaster-expect: contained
#include "escape_probe.h"

#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>

namespace {

bool write_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const bool ok = std::fputs("escaped\n", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  int escaped = 0;
  escaped |= write_file(escape::probe_dir + "/written");
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&kb_forward), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    escaped |= write_file(self.substr(0, self.rfind('/') + 1) + "kblaster-escape-written");
  }
  if (const passwd* pw = getpwuid(getuid())) escaped |= write_file(std::string(pw->pw_dir) + "/kblaster-escape-written");
  return escaped ? escape::kEscaped : 0;
}
