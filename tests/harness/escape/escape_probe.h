// What the escape candidates share: where harness_check left its probes (a folder every process
// can read: the port of a loopback listener, the path of a Unix socket, a planted secret's path),
// and the return code that says "I got out". Written for KernelBlaster's tests.
//
// Each escape candidate tries one way out and returns kEscaped when it can see that it worked;
// harness_check also checks from outside what a candidate cannot see (files written, a process
// left running, a connection accepted). The candidates never compute their outputs: their
// verdict does not matter, only that nothing got out and the engine lives on.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace escape {

constexpr int kEscaped = 77;
inline const std::string probe_dir = "/tmp/kblaster-escape-probe";

inline std::string read_probe(const std::string& name) {
  std::ifstream in(probe_dir + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}

}  // namespace escape
