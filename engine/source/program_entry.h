// Whether a source is a program (it defines main) rather than a kernel library: a program can be
// run as it is (under ncu, or with the capture agent); a task's kernel needs the harness.
#pragma once

#include <string>

namespace kblaster::engine {

/// True when `source` defines `int main(`, spaced any way.
bool defines_main(const std::string& source);

}  // namespace kblaster::engine
