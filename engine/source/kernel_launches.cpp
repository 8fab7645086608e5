// Launch-site scanning.
#include "engine/source/kernel_launches.h"

#include "engine/source/kernel_locator.h"

#include <algorithm>
#include <cctype>

namespace kblaster::engine {
namespace {

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::vector<std::string> launch_configurations(std::string_view source, std::string_view name) {
  std::vector<std::string> out;
  if (name.empty()) return out;
  for (std::size_t at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    if (at > 0 && ident(source[at - 1])) continue;
    std::size_t i = at + name.size();
    if (i < source.size() && ident(source[i])) continue;
    while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
    if (source.substr(i, 3) != "<<<" && i < source.size() && source[i] == '<') {
      // Template arguments: skip to the matching '>' (none of `<<<` inside them).
      int depth = 0;
      for (; i < source.size(); ++i) {
        if (source[i] == '<') ++depth;
        else if (source[i] == '>' && --depth == 0) break;
        else if (source[i] == ';' || source[i] == '{') break;
      }
      if (i >= source.size() || source[i] != '>') continue;
      ++i;
      while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
    }
    if (source.substr(i, 3) != "<<<") continue;
    const std::size_t close = source.find(">>>", i + 3);
    if (close == std::string_view::npos) continue;
    std::string config;
    bool space = false;
    for (const char c : source.substr(i + 3, close - i - 3)) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        space = !config.empty();
        continue;
      }
      if (space) config += ' ';
      space = false;
      config += c;
    }
    if (!config.empty() && std::find(out.begin(), out.end(), config) == out.end()) out.push_back(config);
  }
  return out;
}

std::vector<std::string> kernels_launched_by(std::string_view source, std::string_view caller) {
  std::vector<std::string> out;
  const auto symbols = locate_cuda_symbols(source);
  const auto defined = std::find_if(symbols.begin(), symbols.end(), [&](const cuda_symbol& s) {
    return s.is_definition && s.name == caller && s.kind != cuda_symbol_kind::global_kernel;
  });
  if (defined == symbols.end()) return out;
  const auto& range = defined->full_range;
  const std::string_view body = source.substr(range.begin, std::min(range.end, source.size()) - range.begin);
  for (const auto& s : symbols)
    if (s.kind == cuda_symbol_kind::global_kernel && s.is_definition && !launch_configurations(body, s.name).empty() &&
        std::find(out.begin(), out.end(), s.name) == out.end())
      out.push_back(s.name);
  return out;
}

}  // namespace kblaster::engine
