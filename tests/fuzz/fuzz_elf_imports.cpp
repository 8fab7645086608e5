// libFuzzer target: the harness's reader of candidate ELF files, on arbitrary bytes. A model
// writes the candidate, so the reader must never read outside the file whatever its headers
// say. Built by scripts/fuzz with ASan and UBSan; seeds in tests/fuzz/corpus_elf/.
#include "harness/elf_imports.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto imports = kblaster::harness::parse_elf_imports(
        std::string_view(reinterpret_cast<const char*>(data), size));
    (void)kblaster::harness::forbidden_library_reason(imports);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
