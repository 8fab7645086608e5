// Token estimate (see token_estimate.h).
#include "engine/llm/token_estimate.h"

namespace kblaster::engine::llm {
namespace {

bool is_letter(unsigned char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }
bool is_space(unsigned char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::int64_t estimate_tokens(std::string_view text) noexcept {
  std::int64_t tokens = 0;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t j = i;
    if (is_letter(c)) {
      while (j < n && is_letter(static_cast<unsigned char>(text[j]))) ++j;
      const std::size_t len = j - i;
      tokens += len <= 6 ? 1 : static_cast<std::int64_t>((len + 3) / 4);
    } else if (is_digit(c)) {
      while (j < n && is_digit(static_cast<unsigned char>(text[j]))) ++j;
      tokens += static_cast<std::int64_t>((j - i + 2) / 3);
    } else if (is_space(c)) {
      bool newline = false;
      while (j < n && is_space(static_cast<unsigned char>(text[j]))) newline |= text[j++] == '\n';
      // A single space merges into the next word's token; indentation and newlines do not.
      if (newline || j - i > 1) ++tokens;
    } else {
      ++tokens;
      ++j;
    }
    i = j;
  }
  return tokens;
}

}  // namespace kblaster::engine::llm
