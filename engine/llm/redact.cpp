// Secret redaction for logs, errors and recordings.
#include "engine/llm/redact.h"

#include <regex>

namespace kblaster::engine::llm {

void redactor::add_secret(const std::string& secret) {
  if (secret.size() < 4) return;
  std::lock_guard lock(mutex_);
  secrets_.push_back(secret);
}

std::string redactor::operator()(std::string text) const {
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : secrets_)
      for (std::size_t pos = text.find(s); pos != std::string::npos; pos = text.find(s, pos))
        text.replace(pos, s.size(), "[redacted]");
  }
  // Header-shaped and key-shaped text, in case a key we were not told about went by.
  static const std::regex header(R"(((?:authorization|x-api-key|api-key)\s*[:=]\s*)(bearer\s+)?[^\s",}]+)",
                                 std::regex::icase);
  static const std::regex key_like(R"(\b(sk-(?:ant-)?)[A-Za-z0-9_\-]{12,})");
  text = std::regex_replace(text, header, "$1$2[redacted]");
  text = std::regex_replace(text, key_like, "$1[redacted]");
  return text;
}

}  // namespace kblaster::engine::llm
