// libFuzzer target: Nsight Compute's source page (engine/profile/ncu_source_parser.h), the
// sass, cuda and cuda,sass views that source attribution reads.
#include "engine/profile/ncu_csv_parser.h"
#include "engine/profile/ncu_source_parser.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)kblaster::engine::parse_ncu_source(kblaster::fuzz::as_text(data, size));
  } catch (const kblaster::engine::ncu_parse_error&) {
  }
  return 0;
}
