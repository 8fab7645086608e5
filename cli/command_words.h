// `--run` / `--build` / `--shape` as typed on the command line.
#pragma once

#include <string>
#include <vector>

namespace kblaster::cli {

/// "make -C build app" -> {"make", "-C", "build", "app"}: split at whitespace, no shell quoting.
std::vector<std::string> command_words(const std::string& line);

}  // namespace kblaster::cli
