// Reading DT_RUNPATH / DT_RPATH from a 64-bit ELF file's dynamic section.
#include "support/elf_runpath.h"

#include "support/unique_fd.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace kblaster::support {
namespace fs = std::filesystem;

namespace {

template <typename T>
bool read_at(int fd, std::uint64_t offset, T& out) {
  return ::pread(fd, &out, sizeof out, static_cast<off_t>(offset)) == static_cast<ssize_t>(sizeof out);
}

// The file offset of virtual address `vaddr`, through the loadable segment that maps it.
std::optional<std::uint64_t> file_offset(const std::vector<Elf64_Phdr>& segments, std::uint64_t vaddr) {
  for (const auto& p : segments)
    if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) return vaddr - p.p_vaddr + p.p_offset;
  return std::nullopt;
}

std::string read_string(int fd, std::uint64_t offset) {
  std::string out;
  char buf[256];
  while (out.size() < 16384) {  // a runpath is a few folders; a file that says more is not believed
    const ssize_t got = ::pread(fd, buf, sizeof buf, static_cast<off_t>(offset + out.size()));
    if (got <= 0) break;
    const std::string_view chunk(buf, static_cast<std::size_t>(got));
    const auto nul = chunk.find('\0');
    out.append(chunk.substr(0, nul));
    if (nul != std::string_view::npos) break;
  }
  return out;
}

// The raw RUNPATH (preferred, as the loader does) or RPATH string of an open ELF file.
std::string raw_runpath(int fd) {
  Elf64_Ehdr header{};
  if (!read_at(fd, 0, header) || std::string_view(reinterpret_cast<const char*>(header.e_ident), 4) != ELFMAG ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > 256)
    return {};
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  for (std::size_t i = 0; i < segments.size(); ++i)
    if (!read_at(fd, header.e_phoff + i * sizeof(Elf64_Phdr), segments[i])) return {};
  for (const auto& p : segments) {
    if (p.p_type != PT_DYNAMIC) continue;
    std::optional<std::uint64_t> strtab, runpath, rpath;
    for (std::uint64_t at = p.p_offset; at + sizeof(Elf64_Dyn) <= p.p_offset + p.p_filesz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d{};
      if (!read_at(fd, at, d) || d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
      if (d.d_tag == DT_RUNPATH) runpath = d.d_un.d_val;
      if (d.d_tag == DT_RPATH) rpath = d.d_un.d_val;
    }
    const auto chosen = runpath ? runpath : rpath;
    if (!strtab || !chosen) return {};
    const auto table = file_offset(segments, *strtab);
    return table ? read_string(fd, *table + *chosen) : std::string();
  }
  return {};
}

std::string expand_origin(std::string entry, const std::string& origin) {
  for (const std::string token : {"${ORIGIN}", "$ORIGIN"})
    for (auto at = entry.find(token); at != std::string::npos; at = entry.find(token, at + origin.size()))
      entry.replace(at, token.size(), origin);
  return entry;
}

}  // namespace

std::vector<fs::path> elf_runpath(const fs::path& file) {
  const unique_fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  const auto raw = raw_runpath(fd.get());
  std::error_code ec;
  const auto origin = fs::weakly_canonical(file, ec).parent_path().string();
  std::vector<fs::path> out;
  std::size_t pos = 0;
  while (pos <= raw.size() && !raw.empty()) {
    const auto end = std::min(raw.find(':', pos), raw.size());
    if (end > pos) out.push_back(fs::path(expand_origin(raw.substr(pos, end - pos), origin)).lexically_normal());
    pos = end + 1;
  }
  return out;
}

}  // namespace kblaster::support
