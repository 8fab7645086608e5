// UTF-16 position mapping over UTF-8 text.
#include "protocol/position.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace kblaster::protocol {
namespace {

// Length in bytes of the UTF-8 sequence starting with `lead`; 1 for invalid lead bytes so that
// malformed text still maps somewhere sensible.
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// An LSP uinteger (0 to 2^31 - 1). json's get<int>() would convert 1.3e56 or -5 without a word
// (the first undefined behaviour); anything else is the client's error, reported as json's own
// type error so that the params readers answer invalid_params.
int lsp_uinteger(const nlohmann::json& v, const char* name) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() <= 0x7fffffffu) return static_cast<int>(v.get<std::uint64_t>());
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 0x7fffffff)
    return static_cast<int>(v.get<std::int64_t>());
  throw nlohmann::json::type_error::create(302, std::string("'") + name + "' must be an integer from 0 to 2^31-1", &v);
}

}  // namespace

void to_json(nlohmann::json& j, const position& p) { j = {{"line", p.line}, {"character", p.character}}; }
void from_json(const nlohmann::json& j, position& p) {
  p.line = lsp_uinteger(j.at("line"), "line");
  p.character = lsp_uinteger(j.at("character"), "character");
}
void to_json(nlohmann::json& j, const range& r) { j = {{"start", r.start}, {"end", r.end}}; }
void from_json(const nlohmann::json& j, range& r) {
  r.start = j.at("start").get<position>();
  r.end = j.at("end").get<position>();
}

std::size_t utf16_length(std::string_view utf8) {
  std::size_t units = 0;
  for (std::size_t i = 0; i < utf8.size();) {
    const std::size_t n = sequence_length(static_cast<unsigned char>(utf8[i]));
    units += n == 4 ? 2 : 1;
    i += n;
  }
  return units;
}

line_index::line_index(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts_.push_back(i + 1);
}

std::size_t line_index::offset_of(position p) const {
  if (p.line < 0) return 0;
  if (static_cast<std::size_t>(p.line) >= starts_.size()) return text_.size();
  const std::size_t begin = starts_[p.line];
  std::size_t end = static_cast<std::size_t>(p.line) + 1 < starts_.size() ? starts_[p.line + 1] - 1 : text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;  // "\r\n" line ends
  std::size_t offset = begin;
  long units = std::max(p.character, 0);
  while (offset < end && units > 0) {
    const std::size_t n = sequence_length(static_cast<unsigned char>(text_[offset]));
    const long width = n == 4 ? 2 : 1;
    if (width > units) break;  // inside a surrogate pair: stay at the code point's start
    units -= width;
    offset = std::min(offset + n, end);
  }
  return offset;
}

position line_index::position_of(std::size_t offset) const {
  offset = std::min(offset, text_.size());
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  const std::size_t line = static_cast<std::size_t>(it - starts_.begin()) - 1;
  const std::size_t begin = starts_[line];
  return position{static_cast<int>(line),
                  static_cast<int>(utf16_length(text_.substr(begin, offset - begin)))};
}

}  // namespace kblaster::protocol
