// Parsing of ptxas -v resource usage.
#include "engine/toolchain/ptxas_parser.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <array>
#include <limits>
#include <memory>
#include <optional>

namespace kblaster::engine {

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string function_name_of(std::string_view demangled) {
  // Cut the parameter list at the '(' that is not inside template brackets.
  int depth = 0;
  std::size_t end = demangled.size();
  for (std::size_t i = 0; i < demangled.size(); ++i) {
    const char c = demangled[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == '(' && depth == 0) { end = i; break; }
  }
  std::string_view head = demangled.substr(0, end);
  // Drop a return type ("void "), which is separated by a space outside template brackets.
  depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == ' ' && depth == 0) start = i + 1;
  }
  return std::string(head.substr(start));
}

namespace {

// The lines are read with scans, not std::regex: the regexes (given beside each scan, which
// finds exactly what they found; ptxas_scan_test.cpp checks it) took three quarters of the
// parser's time, and the fuzzer read 700 outputs a second.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
// Not `npos`: the fuzz build compiles this file in one unit with others that declare that name.
constexpr auto not_found = std::string_view::npos;

// Digits as a number, saturated: ptxas output is text a model's candidate influenced.
long long to_ll(std::string_view digits) {
  long long n = 0;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), n).ec == std::errc::result_out_of_range)
    return std::numeric_limits<long long>::max();
  return n;
}
int to_int(long long n) { return static_cast<int>(std::min<long long>(n, std::numeric_limits<int>::max())); }
long long add(long long a, long long b) {
  long long sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<long long>::max() : sum;
}

using words = std::array<std::string_view, 4>;  // up to four; the unused are empty

// Matches `ws` at `at`, each separated by whitespace (\s+); the end, or not_found.
std::size_t words_at(std::string_view text, std::size_t at, const words& ws) {
  bool first = true;
  for (std::string_view w : ws) {
    if (w.empty()) break;
    if (!first) {
      const std::size_t gap = at;
      while (at < text.size() && is_space(text[at])) ++at;
      if (at == gap) return not_found;
    }
    first = false;
    if (text.substr(at, w.size()) != w) return not_found;
    at += w.size();
  }
  return at;
}

enum class item { registers, barriers, smem, cmem, lmem, stack_frame, spill_stores, spill_loads, cumulative };

// One "N unit" item at `at` (just after N): R"(\s+(registers|barriers|bytes\s+smem|bytes\s+cmem\[\d+\]|
// bytes\s+lmem|bytes\s+stack\s+frame|bytes\s+spill\s+stores|bytes\s+spill\s+loads|
// bytes\s+cumulative\s+stack\s+size))"; its kind and end.
std::optional<std::pair<item, std::size_t>> item_at(std::string_view text, std::size_t at) {
  const std::size_t start = at;
  while (at < text.size() && is_space(text[at])) ++at;
  if (at == start) return std::nullopt;
  if (auto e = words_at(text, at, {"registers"}); e != not_found) return {{item::registers, e}};
  if (auto e = words_at(text, at, {"barriers"}); e != not_found) return {{item::barriers, e}};
  if (auto e = words_at(text, at, {"bytes", "cmem["}); e != not_found) {
    std::size_t d = e;
    while (d < text.size() && is_digit(text[d])) ++d;
    if (d > e && d < text.size() && text[d] == ']') return {{item::cmem, d + 1}};
    return std::nullopt;
  }
  static constexpr std::pair<item, words> byte_items[] = {
      {item::smem, {"bytes", "smem"}},
      {item::lmem, {"bytes", "lmem"}},
      {item::stack_frame, {"bytes", "stack", "frame"}},
      {item::spill_stores, {"bytes", "spill", "stores"}},
      {item::spill_loads, {"bytes", "spill", "loads"}},
      {item::cumulative, {"bytes", "cumulative", "stack", "size"}}};
  for (const auto& [kind, unit] : byte_items)
    if (auto e = words_at(text, at, unit); e != not_found) return {{kind, e}};
  return std::nullopt;
}

// Reads the comma-separated "N unit" items of a "Used …" or properties line: every match of
// R"((\d+)ITEM)" (item_at), left to right.
void read_items(std::string_view text, kernel_resources& k) {
  for (std::size_t i = 0; i < text.size();) {
    if (!is_digit(text[i])) {
      ++i;
      continue;
    }
    std::size_t digits_end = i;
    while (digits_end < text.size() && is_digit(text[digits_end])) ++digits_end;
    const auto found = item_at(text, digits_end);
    if (!found) {
      i = digits_end;  // a match starting inside these digits would fail the same way
      continue;
    }
    const long long n = to_ll(text.substr(i, digits_end - i));
    switch (found->first) {
      case item::registers: k.registers = to_int(n); break;
      case item::barriers: k.barriers = to_int(n); break;
      case item::smem: k.shared_bytes = n; break;
      case item::cmem: k.constant_bytes = add(k.constant_bytes, n); break;
      case item::lmem: k.local_bytes = n; break;
      case item::stack_frame: k.stack_frame_bytes = n; break;
      case item::spill_stores: k.spill_store_bytes = n; break;
      case item::spill_loads: k.spill_load_bytes = n; break;
      case item::cumulative: k.cumulative_stack_bytes = n; break;
    }
    i = found->second;
  }
}

// R"(Compiling entry function '([^']+)' for '([^']+)')": the function and the architecture.
std::optional<std::pair<std::string_view, std::string_view>> entry_line(std::string_view line) {
  static constexpr std::string_view head = "Compiling entry function '";
  for (auto at = line.find(head); at != not_found; at = line.find(head, at + 1)) {
    const std::size_t name = at + head.size(), name_end = line.find('\'', name);
    if (name_end == not_found || name_end == name || line.substr(name_end, 7) != "' for '") continue;
    const std::size_t arch = name_end + 7, arch_end = line.find('\'', arch);
    if (arch_end == not_found || arch_end == arch) continue;
    return {{line.substr(name, name_end - name), line.substr(arch, arch_end - arch)}};
  }
  return std::nullopt;
}

// What a regex "HEAD(TOKEN+)FOLLOWED_BY" captures: the first non-empty run of characters
// `in_token` accepts right after an occurrence of `head`, with `followed_by` right after it.
template <typename Pred>
std::optional<std::string_view> token_after(std::string_view line, std::string_view head, Pred in_token,
                                            std::string_view followed_by = {}) {
  for (auto at = line.find(head); at != not_found; at = line.find(head, at + 1)) {
    const std::size_t start = at + head.size();
    std::size_t end = start;
    while (end < line.size() && in_token(line[end])) ++end;
    if (end > start && line.substr(end, followed_by.size()) == followed_by) return line.substr(start, end - start);
  }
  return std::nullopt;
}

// R"(Function properties for (\S+))": the function.
std::optional<std::string_view> properties_line(std::string_view line) {
  return token_after(line, "Function properties for ", [](char c) { return !is_space(c); });
}

// R"(Compile time = ([0-9.]+) ms)": the milliseconds as written.
std::optional<std::string_view> compile_time_line(std::string_view line) {
  return token_after(line, "Compile time = ", [](char c) { return is_digit(c) || c == '.'; }, " ms");
}

}  // namespace

namespace {

// The product of the comma-separated integers after `directive` in `head` (".maxntid 128, 1, 1"
// -> 128); 0 when the directive is absent.
int directive_product(std::string_view head, std::string_view directive) {
  const auto at = head.find(directive);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = head.substr(at + directive.size());
  rest = rest.substr(0, rest.find('\n'));
  long long product = 1;
  bool any = false;
  for (std::size_t i = 0; i < rest.size();) {
    if (!std::isdigit(static_cast<unsigned char>(rest[i]))) {
      ++i;
      continue;
    }
    long long v = 0;
    const auto [end, ec] = std::from_chars(rest.data() + i, rest.data() + rest.size(), v);
    if (ec != std::errc()) return 0;
    product *= v;
    any = true;
    i = static_cast<std::size_t>(end - rest.data());
    if (product > std::numeric_limits<int>::max()) return 0;
  }
  return any ? static_cast<int>(product) : 0;
}

}  // namespace

void add_ptx_launch_bounds(std::vector<kernel_resources>& resources, std::string_view ptx) {
  constexpr std::string_view entry = ".entry ";
  for (auto at = ptx.find(entry); at != std::string_view::npos; at = ptx.find(entry, at + 1)) {
    const std::size_t name_begin = at + entry.size();
    const std::size_t name_end = ptx.find_first_of("( \t\n", name_begin);
    const std::size_t body = ptx.find('{', name_begin);
    if (name_end == std::string_view::npos || body == std::string_view::npos) break;
    const std::string_view name = ptx.substr(name_begin, name_end - name_begin);
    // The performance directives sit between the parameter list and the body.
    const std::string_view head = ptx.substr(name_end, body - name_end);
    int max_threads = directive_product(head, ".maxntid");
    if (max_threads == 0) max_threads = directive_product(head, ".reqntid");
    const int min_blocks = directive_product(head, ".minnctapersm");
    for (auto& r : resources)
      if (r.mangled_name == name) {
        r.max_threads_per_block = max_threads;
        r.min_blocks_per_sm = min_blocks;
      }
  }
}

std::vector<kernel_resources> parse_ptxas_output(std::string_view text) {
  std::vector<kernel_resources> out;
  // Properties lines follow "Function properties for X"; X may be a device function that the
  // entry calls, whose figures must not overwrite the entry's.
  bool properties_for_entry = false;
  bool in_entry = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == not_found) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const auto entry = entry_line(line)) {
      kernel_resources k;
      k.mangled_name = entry->first;
      k.demangled_name = demangle(k.mangled_name);
      k.arch = entry->second;
      out.push_back(std::move(k));
      in_entry = true;
      properties_for_entry = false;
    } else if (const auto function = properties_line(line)) {
      properties_for_entry = in_entry && *function == out.back().mangled_name;
    } else if (line.find("ptxas info") == not_found && line.find("stack frame") != not_found) {
      if (properties_for_entry) read_items(line, out.back());
      properties_for_entry = false;
    } else if (in_entry && line.find("Used ") != not_found && line.find("registers") != not_found) {
      read_items(line, out.back());
    } else if (const auto ms = in_entry ? compile_time_line(line) : std::nullopt) {
      out.back().compile_time_ms = std::strtod(std::string(*ms).c_str(), nullptr);
      in_entry = false;
    }
  }
  return out;
}

}  // namespace kblaster::engine
