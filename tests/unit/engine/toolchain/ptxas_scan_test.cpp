// parse_ptxas_output reads its lines with scans; it must find what the regexes it replaced
// found. The regex parser is kept here as the specification, with two deliberate differences:
// numbers saturate instead of overflowing (a sum of cmem banks was undefined behaviour past a
// long long, a register count past an int wrapped), and a unit of several words ("bytes spill
// stores") counts whatever whitespace separates its words, as its regex did (the old code then
// looked the unit up with single spaces and dropped it).
#include "engine/toolchain/ptxas_parser.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <regex>

using namespace kblaster::engine;

namespace {

std::string single_spaced(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space) out += c;
    else if (out.empty() || out.back() != ' ') out += ' ';
  }
  return out;
}

long long saturated(const std::string& digits) { return std::strtoll(digits.c_str(), nullptr, 10); }

void read_items_by_regex(const std::string& text, kernel_resources& k) {
  static const std::regex item(R"((\d+)\s+(registers|barriers|bytes\s+smem|bytes\s+cmem\[\d+\]|bytes\s+lmem|bytes\s+stack\s+frame|bytes\s+spill\s+stores|bytes\s+spill\s+loads|bytes\s+cumulative\s+stack\s+size))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), item); it != std::sregex_iterator(); ++it) {
    const long long n = saturated((*it)[1]);
    const int as_int = static_cast<int>(std::min<long long>(n, std::numeric_limits<int>::max()));
    const std::string what = single_spaced((*it)[2]);
    if (what == "registers") k.registers = as_int;
    else if (what == "barriers") k.barriers = as_int;
    else if (what.find("smem") != std::string::npos) k.shared_bytes = n;
    else if (what.find("cmem") != std::string::npos)
      k.constant_bytes = n > std::numeric_limits<long long>::max() - k.constant_bytes ? std::numeric_limits<long long>::max()
                                                                                       : k.constant_bytes + n;
    else if (what.find("lmem") != std::string::npos) k.local_bytes = n;
    else if (what.find("stack frame") != std::string::npos) k.stack_frame_bytes = n;
    else if (what.find("spill stores") != std::string::npos) k.spill_store_bytes = n;
    else if (what.find("spill loads") != std::string::npos) k.spill_load_bytes = n;
    else if (what.find("cumulative") != std::string::npos) k.cumulative_stack_bytes = n;
  }
}

std::vector<kernel_resources> parse_by_regex(const std::string& text) {
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex compile_time(R"(Compile time = ([0-9.]+) ms)");
  std::vector<kernel_resources> out;
  bool properties_for_entry = false, in_entry = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      kernel_resources k;
      k.mangled_name = m[1];
      k.demangled_name = demangle(k.mangled_name);
      k.arch = m[2];
      out.push_back(std::move(k));
      in_entry = true;
      properties_for_entry = false;
    } else if (std::regex_search(line, m, props)) {
      properties_for_entry = in_entry && m[1] == out.back().mangled_name;
    } else if (line.find("ptxas info") == std::string::npos && line.find("stack frame") != std::string::npos) {
      if (properties_for_entry) read_items_by_regex(line, out.back());
      properties_for_entry = false;
    } else if (in_entry && line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos) {
      read_items_by_regex(line, out.back());
    } else if (in_entry && std::regex_search(line, m, compile_time)) {
      out.back().compile_time_ms = std::strtod(m[1].str().c_str(), nullptr);
      in_entry = false;
    }
  }
  return out;
}

void check_same(const std::string& text) {
  CAPTURE(text);
  const auto got = parse_ptxas_output(text);
  const auto want = parse_by_regex(text);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].mangled_name == want[i].mangled_name);
    CHECK(got[i].arch == want[i].arch);
    CHECK(got[i].registers == want[i].registers);
    CHECK(got[i].barriers == want[i].barriers);
    CHECK(got[i].shared_bytes == want[i].shared_bytes);
    CHECK(got[i].constant_bytes == want[i].constant_bytes);
    CHECK(got[i].local_bytes == want[i].local_bytes);
    CHECK(got[i].stack_frame_bytes == want[i].stack_frame_bytes);
    CHECK(got[i].spill_store_bytes == want[i].spill_store_bytes);
    CHECK(got[i].spill_load_bytes == want[i].spill_load_bytes);
    CHECK(got[i].cumulative_stack_bytes == want[i].cumulative_stack_bytes);
    CHECK(got[i].compile_time_ms == want[i].compile_time_ms);
  }
}

}  // namespace

TEST_CASE("ptxas scans agree with the regexes: chosen lines") {
  const std::string entry = "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n";
  for (const std::string& text : std::vector<std::string>{
           entry + "ptxas info    : Used 32 registers, 8 bytes smem, 380 bytes cmem[0], 4 bytes cmem[2]\n",
           entry + "ptxas info    : Used 12registers, 1 barriers,  7\tbytes \t spill  stores\n",
           entry + "ptxas info    : Function properties for _Z1kPf\n    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n",
           entry + "ptxas info    : Function properties for  _Z1kPf\n    16 bytes stack frame\n",
           entry + "ptxas info    : Used 5 registers, 9 bytes cmem[], 9 bytes cmem[x], 9 bytes cmem[3\n",
           entry + "ptxas info    : Used 1 registers, 12345 bytes cumulative stack size\nptxas info : Compile time = 1.5 ms\n",
           entry + "ptxas info : Compile time = .. ms\nptxas info : Compile time = 3ms\n",
           "Compiling entry function '' for 'sm_90'\nCompiling entry function 'a' for ''\n",
           "Compiling entry function 'a' for 'b' Compiling entry function 'c' for 'd'\r\nUsed 1 registers\n",
           "x Compiling entry function 'a'for 'b' Compiling entry function 'c' for 'd'\n",
       })
    check_same(text);
}

// Found reading the parser for fuzz_ptxas (regressions/fuzz_ptxas/cmem-sum-overflow): two cmem
// banks near the largest long long overflowed the sum, which UBSan stops on.
TEST_CASE("ptxas: figures beyond their types saturate") {
  const auto k = parse_ptxas_output(
      "ptxas info : Compiling entry function '_Z1kv' for 'sm_90'\n"
      "ptxas info : Used 99999999999 registers, 9223372036854775807 bytes cmem[0], 9223372036854775807 bytes cmem[1], "
      "99999999999999999999 bytes smem\n");
  REQUIRE(k.size() == 1);
  CHECK(k[0].registers == std::numeric_limits<int>::max());
  CHECK(k[0].constant_bytes == std::numeric_limits<long long>::max());
  CHECK(k[0].shared_bytes == std::numeric_limits<long long>::max());
}

TEST_CASE("ptxas scans agree with the regexes: random texts") {
  const std::vector<std::string> pieces = {
      "\n", "\r", " ", "  ", "\t", "ptxas info : ", "Compiling entry function '", "'", " for '", "_Z1kv", "sm_90",
      "Function properties for ", "_Z1kv", "Used ", "1", "42", "99999999999999999999", ", ", "registers", "barriers",
      "bytes", "smem", "cmem[", "]", "0", "lmem", "stack", "frame", "stack frame", "spill", "stores", "loads",
      "cumulative", "size", "Compile time = ", ".", "3.5", " ms", "ms"};
  std::mt19937 random(21);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(0, 30);
  for (int i = 0; i < 3000; ++i) {
    // Half start inside an entry, where the items are read.
    std::string text = i % 2 ? "Compiling entry function '_Z1kv' for 'sm_90'\n" : "";
    for (int n = length(random); n > 0; --n) text += pieces[piece(random)];
    check_same(text);
  }
}
