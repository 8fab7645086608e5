// Small string helpers shared by every layer.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::support {

inline constexpr std::string_view ascii_whitespace = " \t\r\n\f\v";

/// `s` without leading and trailing characters from `chars` (ASCII whitespace by default).
constexpr std::string_view trim(std::string_view s, std::string_view chars = ascii_whitespace) {
  const auto b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

/// The first line of a (possibly long) message.
inline std::string first_line(std::string_view s) { return std::string(s.substr(0, s.find('\n'))); }

/// `parts` with `separator` between them: a command line for a message.
inline std::string join(const std::vector<std::string>& parts, std::string_view separator = " ") {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

// Numbers and durations as messages, reports and prompts write them: one implementation each,
// the unit and the decimals chosen by the caller, so that a figure reads the same everywhere.

/// A figure with `digits` decimals ("%.*f"): the one way a number is written in a message.
inline std::string fixed_text(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// A figure with at most `digits` significant digits ("%.*g": "0.0123", "1.5e+03"); 6 is how a
/// stream writes a double.
inline std::string significant_text(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

/// "1.25x": a ratio (a speedup) with `digits` decimals.
inline std::string times_text(double ratio, int digits) { return fixed_text(ratio, digits) + "x"; }

/// "42%": a percentage with `digits` decimals.
inline std::string percent_text(double percent, int digits) { return fixed_text(percent, digits) + "%"; }

/// "12.5 us": microseconds with `digits` decimals.
inline std::string us_text(double us, int digits) { return fixed_text(us, digits) + " us"; }

/// "0.0123 ms": milliseconds with `digits` decimals.
inline std::string ms_text(double ms, int digits) { return fixed_text(ms, digits) + " ms"; }

/// "1.50 s": seconds with `digits` decimals.
inline std::string seconds_text(double s, int digits) { return fixed_text(s, digits) + " s"; }

/// A duration for a message: "0.2 s", "30 s", "1.5e+06 s" (%g: no trailing zeros).
inline std::string seconds_text(double s) { return significant_text(s, 6) + " s"; }

/// "1 candidate", "3 candidates": a count with its noun, plural unless the count is one.
inline std::string count_text(long long n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace kblaster::support
