// Small string helpers shared by every layer.
#pragma once

#include <string_view>

namespace kblaster::support {

inline constexpr std::string_view ascii_whitespace = " \t\r\n\f\v";

/// `s` without leading and trailing characters from `chars` (ASCII whitespace by default).
constexpr std::string_view trim(std::string_view s, std::string_view chars = ascii_whitespace) {
  const auto b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

}  // namespace kblaster::support
