#include "cli/command_words.h"

#include <sstream>

namespace kblaster::cli {

std::vector<std::string> command_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace kblaster::cli
