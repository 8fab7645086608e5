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
  if (auto [f, b] = split_prefix(head, "hz"); f != 0.0 && tail.empty()) return {value * f, "hz"};
  // Counts with a prefix, per time or per something else: "Gbyte/second", "cycle/nsecond"
  // (a clock, as the details page prints it), "Kbyte/cycle", "Kinst/cycle".
  static constexpr std::array<std::string_view, 6> counts{"byte", "inst", "cycle", "sector", "thread", "warp"};
  static constexpr std::array<std::pair<std::string_view, double>, 8> per_time{{
      {"/s", 1.0}, {"/second", 1.0}, {"/ms", 1e3}, {"/msecond", 1e3},
      {"/us", 1e6}, {"/usecond", 1e6}, {"/ns", 1e9}, {"/nsecond", 1e9}}};
  for (const auto base : counts) {
    const auto [f, b] = split_prefix(head, base);
    if (f == 0.0) continue;
    for (const auto& [name, rate] : per_time)
      if (tail == name) return {value * f * rate, std::string(base) + "/second"};
    return {value * f, std::string(base) + std::string(tail)};
  }
  return {value, std::string(unit)};
}

}  // namespace kblaster::engine
