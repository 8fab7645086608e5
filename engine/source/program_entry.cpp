// Recognising a program's entry point.
#include "engine/source/program_entry.h"

#include <regex>

namespace kblaster::engine {

bool defines_main(const std::string& source) {
  static const std::regex main_function(R"(\bint\s+main\s*\()");
  return std::regex_search(source, main_function);
}

}  // namespace kblaster::engine
