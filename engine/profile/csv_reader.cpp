// RFC 4180 CSV reading for Nsight Compute's exports.
#include "engine/profile/csv_reader.h"

#include <array>
#include <cstring>

namespace kblaster::engine {

namespace {

// The characters that end a run of plain text outside quotes.
constexpr std::array<bool, 256> special = [] {
  std::array<bool, 256> s{};
  for (unsigned char c : {',', '\n', '\r', '"'}) s[c] = true;
  return s;
}();

}  // namespace

// Runs of plain text are found with memchr and a table and appended whole, not a character at a
// time: pages are megabytes of quoted fields, and the fuzzer read 430 of them a second so.
bool csv_reader::next(std::vector<std::string>& fields) {
  fields.clear();
  if (pos_ >= text_.size()) return false;
  record_line_ = line_;
  const char* const text = text_.data();
  const std::size_t size = text_.size();
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  while (pos_ < size) {
    if (quoted) {
      // Up to the next quote; newlines inside quotes belong to the field and count as lines.
      const auto* q = static_cast<const char*>(std::memchr(text + pos_, '"', size - pos_));
      const std::size_t end = q ? static_cast<std::size_t>(q - text) : size;
      for (const char* nl = text + pos_; (nl = static_cast<const char*>(std::memchr(nl, '\n', text + end - nl))); ++nl)
        ++line_;
      field.append(text + pos_, end - pos_);
      pos_ = end;
      if (!q) break;
      ++pos_;
      if (pos_ < size && text[pos_] == '"') {  // a doubled quote is one quote
        field.push_back('"');
        ++pos_;
      } else {
        quoted = false;
      }
      continue;
    }
    std::size_t end = pos_;
    while (end < size && !special[static_cast<unsigned char>(text[end])]) ++end;
    field.append(text + pos_, end - pos_);
    pos_ = end;
    if (end == size) break;
    const char c = text[pos_++];
    if (c == '"') {
      // A quote opens a quoted field only at its start; elsewhere it is text.
      if (!was_quoted && field.empty()) quoted = was_quoted = true;
      else field.push_back(c);
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      ++line_;
      break;
    }
    // '\r': part of a \r\n line end; a stray \r inside an unquoted field is dropped too.
  }
  fields.push_back(std::move(field));
  return true;
}

std::size_t column_index(const std::vector<std::string>& header, std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return std::string_view::npos;
}

}  // namespace kblaster::engine
