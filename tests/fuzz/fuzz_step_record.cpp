// libFuzzer target: the run journal's step records (engine/optimize/step_record.h), read back
// from steps.jsonl on resume. A bad record must be std::invalid_argument naming the field, and a
// record that reads must read the same after its own to_json.
#include "engine/optimize/step_record.h"
#include "fuzz_input.h"

#include <cstdlib>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace optimize = kblaster::engine::optimize;
  const auto j = kblaster::fuzz::as_json(kblaster::fuzz::as_text(data, size));
  if (!j) return 0;
  optimize::step_record record;
  try {
    record = optimize::step_record_from_json(*j);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const auto written = optimize::to_json(record);
  try {
    if (optimize::to_json(optimize::step_record_from_json(written)) != written) std::abort();
  } catch (const std::invalid_argument&) {
    std::abort();  // the journal must read what it wrote
  }
  return 0;
}
