// What a candidate shared object links against, read from its ELF file before it is loaded:
// needed libraries (DT_NEEDED), undefined dynamic symbols, and every symbol name. The harness
// refuses candidates that import cuBLAS, cuDNN, CUTLASS, BLAS or LibTorch unless the task allows
// libraries, and ones that name such a library anywhere (a dlopen behind our back). dlopen itself
// cannot be refused: nvcc's static CUDA runtime uses it to load the driver.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::harness {

/// The dynamic-linking facts of one ELF shared object.
struct elf_imports {
  std::vector<std::string> needed;     // DT_NEEDED entries, e.g. "libcublas.so.13"
  std::vector<std::string> undefined;  // undefined symbols in .dynsym
  std::vector<std::string> symbols;    // every name in .dynsym and .symtab
  std::vector<std::string> library_strings;  // forbidden library names found anywhere in the file
  std::uint64_t init_array_entries = 0;  // functions run when the object is loaded (.init_array)
  std::uint64_t fini_array_entries = 0;  // ... and when it is unloaded (.fini_array)
  bool writable_executable = false;      // a PT_LOAD segment both writable and executable
  bool executable_stack = false;         // PT_GNU_STACK asks for an executable stack
};

/// Reads `path` (64-bit little-endian ELF). Throws std::runtime_error on anything else.
elf_imports read_elf_imports(const std::string& path);
/// The same from the file's bytes. Any bytes at all: a malformed file is a runtime_error,
/// never a read outside `data`.
elf_imports parse_elf_imports(std::string_view data);

/// The first reason `imports` breaks the no-libraries rule, or empty when it does not.
std::string forbidden_library_reason(const elf_imports& imports);

}  // namespace kblaster::harness
