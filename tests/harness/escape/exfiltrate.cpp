// exfiltrate: the attack seen in issue 50. Reads files outside its scratch folder (one planted
// in /tmp, one in the real home's ~/.config: their paths are in the probes' folder) and throws
// what it read, so that the text would come back in the reply's reason, reach the editor and the
// next repair prompt. Contained: it reads nothing (the sandbox shows neither file), and what it
// throws comes back marked as its own and bounded.
// kblaster-expect: contained
#include "escape_probe.h"

#include <dlpack/dlpack.h>

#include <fstream>
#include <stdexcept>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  std::istringstream planted(escape::read_probe("planted"));
  std::string stolen;
  for (std::string path; std::getline(planted, path);) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    stolen += s.str();
  }
  // Long on purpose, and with a terminal escape: both must be gone from the reason.
  throw std::runtime_error("\x1b[2Jstolen: [" + stolen + "] " + std::string(4000, 'x'));
}
