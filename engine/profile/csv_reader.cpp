// RFC 4180 CSV reading for Nsight Compute's exports.
#include "engine/profile/csv_reader.h"

namespace kblaster::engine {

bool csv_reader::next(std::vector<std::string>& fields) {
  fields.clear();
  if (pos_ >= text_.size()) return false;
  record_line_ = line_;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  while (pos_ < text_.size()) {
    const char c = text_[pos_++];
    if (quoted) {
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          field.push_back('"');
          ++pos_;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_;
        field.push_back(c);
      }
      continue;
    }
    if (c == '"' && !was_quoted && field.empty()) {
      quoted = true;
      was_quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      ++line_;
      break;
    } else if (c == '\r') {
      // Part of a \r\n line end; a stray \r inside an unquoted field is dropped too.
    } else {
      field.push_back(c);
    }
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
