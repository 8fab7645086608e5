// libFuzzer target: Nsight Compute's CSV pages (engine/profile/ncu_csv_parser.h, csv_reader.h).
// ncu prints the program's own output and rule texts into the same stream, and `profile
// --ncu-csv` reads files a user names, so the parsers take anything. The input is read as a
// details page and as a raw page merged into it; the reader alone must end and count lines.
#include "engine/profile/csv_reader.h"
#include "engine/profile/ncu_csv_parser.h"
#include "fuzz_input.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace engine = kblaster::engine;
  const std::string_view text = kblaster::fuzz::as_text(data, size);

  engine::csv_reader reader(text);
  std::vector<std::string> fields;
  std::size_t last_line = 0;
  while (reader.next(fields)) {
    if (reader.line() < last_line || fields.empty()) std::abort();  // lines only go forward
    last_line = reader.line();
    (void)engine::column_index(fields, "ID");
  }

  engine::profile_report report;
  try {
    report = engine::parse_ncu_details(text);
  } catch (const engine::ncu_parse_error&) {
  }
  try {
    engine::merge_ncu_raw(report, text);
  } catch (const engine::ncu_parse_error&) {
  }
  return 0;
}
