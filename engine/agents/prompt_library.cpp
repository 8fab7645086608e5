// Prompt loading and rendering.
#include "engine/agents/prompt_library.h"

#include <stdexcept>

namespace kblaster::engine::agents {

std::string prompt_text(const std::string& file) {
  const auto& files = embedded_prompt_files();
  auto it = files.find(file);
  if (it == files.end()) throw std::out_of_range("no embedded prompt file " + file);
  std::string_view text = it->second;
  // Drop the leading "# ..." provenance lines and the blank line after them.
  while (!text.empty() && text.front() == '#') {
    const auto nl = text.find('\n');
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  return std::string(text);
}

std::string render(const std::string& templ, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(templ.size() + 1024);
  std::size_t pos = 0;
  while (true) {
    const auto open = templ.find("{{", pos);
    if (open == std::string::npos) break;
    const auto close = templ.find("}}", open + 2);
    if (close == std::string::npos) break;
    const std::string key = templ.substr(open + 2, close - open - 2);
    auto it = vars.find(key);
    if (it == vars.end()) throw std::invalid_argument("prompt placeholder {{" + key + "}} has no value");
    out.append(templ, pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
  out.append(templ, pos, std::string::npos);
  return out;
}

}  // namespace kblaster::engine::agents
