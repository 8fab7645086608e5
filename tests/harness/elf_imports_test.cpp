// The candidate ELF reader on real files and on hostile ones: a model writes the candidate, so
// every header field may lie. Lies must be runtime_errors (or ignored), never reads outside the
// file (this test runs under ASan in scripts/fuzz's build too).
#include "harness/elf_imports.h"

#include <doctest/doctest.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

using kblaster::harness::parse_elf_imports;

namespace {

std::string self_bytes() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename T>
void put(std::string& data, std::size_t offset, const T& v) {
  std::memcpy(data.data() + offset, &v, sizeof v);
}

Elf64_Ehdr header_of(const std::string& data) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  return eh;
}

// Parses, accepting a clean runtime_error; anything else (a crash under ASan) fails the test.
bool parses(const std::string& data) {
  try {
    (void)parse_elf_imports(data);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("a real executable: its needed libraries, undefined and defined symbols") {
  const auto imports = parse_elf_imports(self_bytes());
  CHECK(std::any_of(imports.needed.begin(), imports.needed.end(),
                    [](const std::string& n) { return n.rfind("libstdc++", 0) == 0; }));
  CHECK(std::find(imports.undefined.begin(), imports.undefined.end(), "memcpy") != imports.undefined.end());
  CHECK(!imports.symbols.empty());
  // This executable holds the reader's own list of forbidden names in .rodata: it is found.
  CHECK(std::find(imports.library_strings.begin(), imports.library_strings.end(), "libcublas") !=
        imports.library_strings.end());
}

TEST_CASE("not ELF, or not 64-bit little-endian: a clear error") {
  CHECK_THROWS_WITH_AS(parse_elf_imports("hello"), "not an ELF file", std::runtime_error);
  std::string data = self_bytes().substr(0, sizeof(Elf64_Ehdr));
  data[EI_CLASS] = ELFCLASS32;
  CHECK_THROWS_WITH_AS(parse_elf_imports(data), "not a 64-bit little-endian ELF file", std::runtime_error);
}

TEST_CASE("section headers placed at the end of the address space are refused, not read") {
  // e_shoff + sizeof(Elf64_Shdr) wraps around 2^64: a naive bounds check passes and reads far
  // outside the file.
  std::string data = self_bytes();
  auto eh = header_of(data);
  eh.e_shoff = std::numeric_limits<std::uint64_t>::max() - 8;
  put(data, 0, eh);
  CHECK_FALSE(parses(data));
  eh.e_shoff = data.size() - 1;
  put(data, 0, eh);
  CHECK_FALSE(parses(data));
}

TEST_CASE("sections that lie about their offset, size, link or entry size") {
  const std::string original = self_bytes();
  const auto eh = header_of(original);
  REQUIRE(eh.e_shnum > 0);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const std::size_t at = eh.e_shoff + std::size_t(i) * eh.e_shentsize;
    Elf64_Shdr sh;
    std::memcpy(&sh, original.data() + at, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNAMIC) continue;
    for (const auto& lie : {std::pair<const char*, std::uint64_t>{"offset", std::numeric_limits<std::uint64_t>::max() - 4},
                            {"size", std::numeric_limits<std::uint64_t>::max()},
                            {"link", 0xffffffffu},
                            {"entsize", 1},
                            {"entsize0", 0}}) {
      std::string data = original;
      Elf64_Shdr bad = sh;
      const std::string what = lie.first;
      if (what == "offset") bad.sh_offset = lie.second;
      else if (what == "size") bad.sh_size = lie.second;
      else if (what == "link") bad.sh_link = static_cast<std::uint32_t>(lie.second);
      else bad.sh_entsize = lie.second;
      put(data, at, bad);
      CAPTURE(what);
      (void)parses(data);  // either outcome; the point is no read outside the bytes
    }
    // The string table of a section pointing past the file: names come back empty or not at all.
    if (sh.sh_link < eh.e_shnum) {
      std::string data = original;
      const std::size_t str_at = eh.e_shoff + std::size_t(sh.sh_link) * eh.e_shentsize;
      Elf64_Shdr str;
      std::memcpy(&str, data.data() + str_at, sizeof str);
      str.sh_offset = std::numeric_limits<std::uint64_t>::max() - 2;
      put(data, str_at, str);
      (void)parses(data);
    }
  }
}

TEST_CASE("every truncation of a real file is an error or a partial answer, never a crash") {
  const std::string original = self_bytes();
  for (std::size_t n = 0; n < original.size(); n += std::max<std::size_t>(1, original.size() / 300))
    (void)parses(original.substr(0, n));
  CHECK(parses(original));
}
