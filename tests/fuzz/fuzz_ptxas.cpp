// libFuzzer target: `ptxas -v` output (engine/toolchain/ptxas_parser.h). It is compiler output
// about a model's candidate, mixed with nvcc's own lines; the mangled names it carries reach
// the C++ runtime's demangler.
#include "engine/toolchain/ptxas_parser.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)kblaster::engine::parse_ptxas_output(kblaster::fuzz::as_text(data, size));
  return 0;
}
