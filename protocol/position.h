// LSP positions (line, UTF-16 code unit) and their mapping to byte offsets in UTF-8 text.
//
// LSP 3.17 counts characters in UTF-16 code units unless the client negotiates otherwise;
// a character outside the Basic Multilingual Plane (an emoji, say) is two units but four
// UTF-8 bytes. Everything below the server works in byte offsets.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

namespace kblaster::protocol {

struct position {
  int line = 0;
  int character = 0;  // UTF-16 code units
  friend bool operator==(const position&, const position&) = default;
};

struct range {
  position start;
  position end;
  friend bool operator==(const range&, const range&) = default;
};

void to_json(nlohmann::json& j, const position& p);
void from_json(const nlohmann::json& j, position& p);
void to_json(nlohmann::json& j, const range& r);
void from_json(const nlohmann::json& j, range& r);

/// Line starts of one text, for O(log n) offset <-> position mapping. Immutable once built.
class line_index {
 public:
  explicit line_index(std::string_view text);

  /// Byte offset of `p`. A character past the end of its line clamps to the line's end (as the
  /// spec asks); a line past the end clamps to the end of the text. A position inside a
  /// surrogate pair maps to the start of that code point.
  std::size_t offset_of(position p) const;

  /// Position of byte offset `offset` (clamped to the text's size).
  position position_of(std::size_t offset) const;

  std::size_t line_count() const noexcept { return starts_.size(); }

 private:
  std::string_view text_;
  std::vector<std::size_t> starts_;
};

/// Number of UTF-16 code units in UTF-8 text (invalid bytes count as one unit each).
std::size_t utf16_length(std::string_view utf8);

}  // namespace kblaster::protocol
