// Reading DT_NEEDED and symbol tables from a 64-bit ELF file, without libelf.
#include "harness/elf_imports.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace kblaster::harness {
namespace {

template <typename T>
T read_at(const std::string& data, std::size_t offset) {
  if (offset + sizeof(T) > data.size()) throw std::runtime_error("truncated ELF file");
  T v;
  std::memcpy(&v, data.data() + offset, sizeof(T));
  return v;
}

std::string string_at(const std::string& data, std::size_t table, std::size_t table_size, std::size_t index) {
  if (index >= table_size || table + index >= data.size()) return {};
  const char* s = data.data() + table + index;
  return std::string(s, strnlen(s, std::min(table_size - index, data.size() - table - index)));
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

elf_imports read_elf_imports(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0)
    throw std::runtime_error(path + ": not an ELF file");
  const auto eh = read_at<Elf64_Ehdr>(data, 0);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw std::runtime_error(path + ": not a 64-bit little-endian ELF file");

  std::vector<Elf64_Shdr> sections;
  for (unsigned i = 0; i < eh.e_shnum; ++i)
    sections.push_back(read_at<Elf64_Shdr>(data, eh.e_shoff + std::size_t(i) * eh.e_shentsize));

  elf_imports out;
  // A library loaded by name at run time must have its name in the file (in .rodata).
  for (const char* lib : {"libcublas", "libcudnn", "libtorch", "libc10", "libopenblas", "libblas.so", "libmkl_",
                          "libcusparse", "libcufft", "libcusolver"})
    if (data.find(lib) != std::string::npos) out.library_strings.push_back(lib);
  for (const auto& sh : sections) {
    if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
      if (sh.sh_link >= sections.size() || sh.sh_entsize == 0) continue;
      const auto& strtab = sections[sh.sh_link];
      for (std::size_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sh.sh_entsize) {
        const auto sym = read_at<Elf64_Sym>(data, sh.sh_offset + off);
        auto name = string_at(data, strtab.sh_offset, strtab.sh_size, sym.st_name);
        if (name.empty()) continue;
        if (sh.sh_type == SHT_DYNSYM && sym.st_shndx == SHN_UNDEF) out.undefined.push_back(name);
        out.symbols.push_back(std::move(name));
      }
    } else if (sh.sh_type == SHT_DYNAMIC) {
      if (sh.sh_link >= sections.size()) continue;
      const auto& strtab = sections[sh.sh_link];
      for (std::size_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
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
