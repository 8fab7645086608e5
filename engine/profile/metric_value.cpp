// Parsing of Nsight Compute's printed numbers and units.
#include "engine/profile/metric_value.h"

#include <array>
#include <cstdlib>
#include <string>
#include <utility>

namespace kblaster::engine {

std::optional<double> parse_metric_number(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  std::string digits;
  digits.reserve(text.size());
  for (char c : text) {
    if (c == ',') continue;  // thousands separator; ncu never uses a decimal comma in CSV
    if ((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
      digits.push_back(c);
      continue;
    }
    break;  // " (…)" breakdowns, units glued on, or plain text
  }
  if (digits.empty() || digits == "-" || digits == ".") return std::nullopt;
  const char* begin = digits.data();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

namespace {

// Splits a leading SI prefix off a unit ("Kbyte" → 1e3, "byte"). Only prefixes ncu prints.
std::pair<double, std::string_view> split_prefix(std::string_view unit, std::string_view base) {
  if (unit == base) return {1.0, base};
  if (unit.size() == base.size() + 1 && unit.substr(1) == base) {
    switch (unit[0]) {
      case 'K': case 'k': return {1e3, base};
      case 'M': return {1e6, base};
      case 'G': return {1e9, base};
      case 'T': return {1e12, base};
      case 'P': return {1e15, base};
      case 'm': return {1e-3, base};
      case 'u': return {1e-6, base};
      case 'n': return {1e-9, base};
      default: break;
    }
  }
  return {0.0, {}};
}

}  // namespace

base_quantity to_base_unit(double value, std::string_view unit) {
  // Times: ncu prints "ns", "us", "ms", "s" (and "nsecond", "usecond", "msecond" in older versions).
  static constexpr std::array<std::pair<std::string_view, double>, 8> times{{
      {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0},
      {"nsecond", 1e-9}, {"usecond", 1e-6}, {"msecond", 1e-3}, {"second", 1.0}}};
  for (const auto& [name, factor] : times)
    if (unit == name) return {value * factor, "second"};
  const auto slash = unit.find('/');
  const std::string_view head = unit.substr(0, slash);
  const std::string_view tail = slash == std::string_view::npos ? std::string_view{} : unit.substr(slash);
  if (auto [f, b] = split_prefix(head, "byte"); f != 0.0) {
    if (tail == "/s" || tail == "/second") return {value * f, "byte/second"};
    return {value * f, std::string("byte") + std::string(tail)};
  }
  if (auto [f, b] = split_prefix(head, "hz"); f != 0.0 && tail.empty()) return {value * f, "hz"};
  return {value, std::string(unit)};
}

}  // namespace kblaster::engine
