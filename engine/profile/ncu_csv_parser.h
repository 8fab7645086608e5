// Parsers for Nsight Compute's CSV exports: the details page (with or without the "Body Item
// Label" column) and the raw page. Columns are found by name, never by position, so that
// columns added or missing in other ncu versions do not break them.
#pragma once

#include "engine/profile/profile_report.h"

#include <stdexcept>
#include <string>
#include <string_view>

namespace kblaster::engine {

/// A CSV that is not the page it was given as; the message says what is wrong and where.
class ncu_parse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses `ncu --csv --page details` output. Lines before the header (==PROF== lines, the
/// program's own output) and tables ncu embeds between sections (NVLink, NUMA) are skipped.
/// Throws ncu_parse_error when no details header is found.
profile_report parse_ncu_details(std::string_view csv_text);

/// Parses `ncu --csv --page raw` output (row 1 names, row 2 units when --print-units base was
/// given, then one row per launch) and adds its metrics to the instances of `report` with the
/// same ID, creating instances that the report lacks. Throws ncu_parse_error on a bad header.
void merge_ncu_raw(profile_report& report, std::string_view csv_text);


}  // namespace kblaster::engine
