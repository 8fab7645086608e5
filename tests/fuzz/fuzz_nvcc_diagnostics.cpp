// libFuzzer target: nvcc's, the host compiler's and ptxas's diagnostics
// (engine/toolchain/nvcc_diagnostics.h), which quote the user's or the model's source back.
#include "engine/toolchain/nvcc_diagnostics.h"
#include "fuzz_input.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const auto& d : kblaster::engine::parse_nvcc_diagnostics(kblaster::fuzz::as_text(data, size)))
    if (d.line < 0 || d.column < 0) std::abort();  // 1-based, 0 for unknown
  return 0;
}
