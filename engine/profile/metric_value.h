// Numbers as Nsight Compute prints them: thousands separators, "n/a", scientific notation,
// a leading figure followed by a parenthesised breakdown, and units with SI prefixes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kblaster::engine {

/// The number at the start of `text` ("1,180,696,576 (…)" → 1180696576); nullopt for "n/a",
/// "-", empty or non-numeric text.
std::optional<double> parse_metric_number(std::string_view text);

/// A value converted to its unit's base: seconds, bytes, hertz, bytes/second, or unchanged.
struct base_quantity {
  double value = 0;
  std::string unit;  // e.g. "second", "byte", "hz", "byte/second", "%", or the unit as given
};

/// Converts `value` in `unit` (e.g. "us", "Kbyte", "Ghz", "Tbyte/s") to base units. Nsight
/// Compute's prefixes are decimal: 1 Kbyte = 1000 bytes.
base_quantity to_base_unit(double value, std::string_view unit);

}  // namespace kblaster::engine
