// Reading DT_NEEDED and symbol tables from a 64-bit ELF file, without libelf (the harness is
// built on GPU machines that have none). The file is a model's output: every offset, size and
// index is checked against the bytes before use, without overflow, and the fuzz target
// tests/fuzz/fuzz_elf_imports.cpp feeds it arbitrary bytes under ASan and UBSan.
#include "harness/elf_imports.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace kblaster::harness {
namespace {

// True when [offset, offset + size) lies inside `data`; written so that nothing can overflow.
bool inside(std::string_view data, std::uint64_t offset, std::uint64_t size) {
  return offset <= data.size() && size <= data.size() - offset;
}

template <typename T>
T read_at(std::string_view data, std::uint64_t offset) {
  if (!inside(data, offset, sizeof(T))) throw std::runtime_error("truncated ELF file");
  T v;
  std::memcpy(&v, data.data() + offset, sizeof(T));
  return v;
}

std::string string_at(std::string_view data, std::uint64_t table, std::uint64_t table_size, std::uint64_t index) {
  if (index >= table_size || !inside(data, table, 1) || index >= data.size() - table) return {};
  const std::uint64_t start = table + index;
  const std::uint64_t limit = std::min<std::uint64_t>(table_size - index, data.size() - start);
  const std::string_view s = data.substr(start, limit);
  return std::string(s.substr(0, s.find('\0')));
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

elf_imports read_elf_imports(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse_elf_imports(data);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

elf_imports parse_elf_imports(std::string_view data) {
  if (data.size() < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0)
    throw std::runtime_error("not an ELF file");
  const auto eh = read_at<Elf64_Ehdr>(data, 0);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw std::runtime_error("not a 64-bit little-endian ELF file");
  if (eh.e_shnum > 0 && eh.e_shentsize < sizeof(Elf64_Shdr))
    throw std::runtime_error("section headers smaller than Elf64_Shdr");

  std::vector<Elf64_Shdr> sections;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const std::uint64_t at = std::uint64_t(i) * eh.e_shentsize;  // < 2^32: no overflow
    if (eh.e_shoff > std::numeric_limits<std::uint64_t>::max() - at) throw std::runtime_error("truncated ELF file");
    sections.push_back(read_at<Elf64_Shdr>(data, eh.e_shoff + at));
  }

  elf_imports out;
  if (eh.e_phnum > 0 && eh.e_phentsize >= sizeof(Elf64_Phdr))
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      const std::uint64_t at = std::uint64_t(i) * eh.e_phentsize;  // < 2^32: no overflow
      if (eh.e_phoff > std::numeric_limits<std::uint64_t>::max() - at) throw std::runtime_error("truncated ELF file");
      const auto ph = read_at<Elf64_Phdr>(data, eh.e_phoff + at);
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && (ph.p_flags & PF_X)) out.writable_executable = true;
      if (ph.p_type == PT_GNU_STACK && (ph.p_flags & PF_X)) out.executable_stack = true;
    }
  // A library loaded by name at run time must have its name in the file (in .rodata).
  for (const char* lib : {"libcublas", "libcudnn", "libtorch", "libc10", "libopenblas", "libblas.so", "libmkl_",
                          "libcusparse", "libcufft", "libcusolver"})
    if (data.find(lib) != std::string_view::npos) out.library_strings.push_back(lib);
  for (const auto& sh : sections) {
    if (sh.sh_type == SHT_INIT_ARRAY) out.init_array_entries += sh.sh_size / sizeof(std::uint64_t);
    if (sh.sh_type == SHT_FINI_ARRAY) out.fini_array_entries += sh.sh_size / sizeof(std::uint64_t);
    if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
      // Entries smaller than a symbol would read overlapping symbols, one per byte.
      if (sh.sh_link >= sections.size() || sh.sh_entsize < sizeof(Elf64_Sym)) continue;
      if (!inside(data, sh.sh_offset, sh.sh_size)) throw std::runtime_error("truncated ELF file");
      const auto& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sh.sh_entsize) {
        const auto sym = read_at<Elf64_Sym>(data, sh.sh_offset + off);
        auto name = string_at(data, strtab.sh_offset, strtab.sh_size, sym.st_name);
        if (name.empty()) continue;
        if (sh.sh_type == SHT_DYNSYM && sym.st_shndx == SHN_UNDEF) out.undefined.push_back(name);
        out.symbols.push_back(std::move(name));
      }
    } else if (sh.sh_type == SHT_DYNAMIC) {
      if (sh.sh_link >= sections.size()) continue;
      if (!inside(data, sh.sh_offset, sh.sh_size)) throw std::runtime_error("truncated ELF file");
      const auto& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
        const auto dyn = read_at<Elf64_Dyn>(data, sh.sh_offset + off);
        if (dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag == DT_NEEDED) out.needed.push_back(string_at(data, strtab.sh_offset, strtab.sh_size, dyn.d_un.d_val));
      }
    }
  }
  return out;
}

std::string forbidden_library_reason(const elf_imports& imports) {
  // Libraries that do the work for the candidate (vendor GEMMs, convolutions, LibTorch itself).
  static const char* const libraries[] = {"libcublas", "libcublasLt", "libcudnn", "libtorch", "libc10",
                                          "libcaffe2", "libblas", "libopenblas", "libmkl", "libcutlass",
                                          "libcusparse", "libcufft", "libcusolver", "libnccl"};
  for (const auto& lib : imports.needed)
    for (const char* bad : libraries)
      if (starts_with(lib, bad)) return "links " + lib + " (libraries are not allowed for this task)";
  // Symbols of those libraries, even when not named in DT_NEEDED (an undefined symbol that the
  // harness process happens to provide, e.g. LibTorch's own).
  static const char* const prefixes[] = {"cublas", "cudnn", "cblas_", "sgemm_", "dgemm_", "cusparse", "cufft",
                                         "_ZN2at", "_ZNK2at", "_ZN3c10", "_ZNK3c10", "_ZN5torch", "_ZNK5torch"};
  for (const auto& sym : imports.undefined) {
    for (const char* bad : prefixes)
      if (starts_with(sym, bad)) return "imports " + sym + " (libraries are not allowed for this task)";
  }
  if (!imports.library_strings.empty())
    return "names " + imports.library_strings.front() + " (loading it at run time is not allowed for this task)";
  for (const auto& sym : imports.symbols)
    if (sym.find("cutlass") != std::string::npos)
      return "contains CUTLASS code (" + sym.substr(0, 80) + "); libraries are not allowed for this task";
  return {};
}

}  // namespace kblaster::harness
