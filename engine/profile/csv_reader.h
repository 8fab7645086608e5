// A small RFC 4180 CSV reader for Nsight Compute's exports: quoted fields may hold commas,
// doubled quotes and newlines (rule texts do), lines end in \n or \r\n.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// Reads one record at a time from a text held in memory. Not thread-safe; cheap to copy.
class csv_reader {
 public:
  explicit csv_reader(std::string_view text) : text_(text) {}

  /// Reads the next record into `fields` (cleared first). False at the end of the text.
  /// Fields keep their text verbatim apart from the quoting; a record that is a blank line
  /// yields one empty field.
  bool next(std::vector<std::string>& fields);

  /// 1-based line number where the record last returned by next() started.
  std::size_t line() const { return record_line_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t record_line_ = 0;
};

/// What column_index returns for a column that is not there.
inline constexpr std::size_t no_column = std::string_view::npos;

/// Index of the first column named `name` in `header`, or no_column.
std::size_t column_index(const std::vector<std::string>& header, std::string_view name);

}  // namespace kblaster::engine
