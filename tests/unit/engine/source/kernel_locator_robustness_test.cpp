// Kernel locator on broken and hostile input: it must never crash, never read out of range,
// and keep the symbols it can still see.
#include <filesystem>
#include <string>

#include "engine/source/cuda_lexer.h"
#include "tests/unit/engine/source/kernel_locator_test_support.h"

namespace kblaster::engine::locator_test {
namespace {

// Ranges inside the source, the name inside the full range, in source order.
void check_invariants(std::string_view src, const std::vector<cuda_symbol>& symbols) {
  std::size_t previous = 0;
  for (const cuda_symbol& s : symbols) {
    CAPTURE(s.qualified_name);
    REQUIRE(s.full_range.end <= src.size());
    CHECK(s.full_range.begin <= s.name_range.begin);
    CHECK(s.name_range.end <= s.full_range.end);
    CHECK(s.name_range.begin < s.name_range.end);
    CHECK(s.full_range.begin >= previous);
    previous = s.full_range.begin;
  }
}

TEST_CASE("locator: code being typed (unterminated body, string, comment; stray brace)") {
  const std::string src = load_fixture("malformed.cu");
  const auto symbols = locate_cuda_symbols(src);
  REQUIRE(symbols.size() == 2);
  CHECK(covered(src, symbols[0].full_range) == "__global__ void ok_before(float* x) { x[0] = 0.0f; }");
  CHECK(symbols[1].name == "unterminated");
  CHECK(symbols[1].full_range.begin == unique_offset(src, "__global__ void unterminated"));
  CHECK(symbols[1].full_range.end == src.size());  // the body runs to the end of the file
  CHECK(symbols[1].is_definition);
}

TEST_CASE("locator: every prefix of every fixture is located without a crash") {
  // A file cut anywhere is what an editor sends while typing.
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(KBLASTER_FIXTURES_DIR) + "/locator")) {
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    const std::string src = load_fixture(name);
    const auto full = locate_cuda_symbols(src);
    check_invariants(src, full);
    for (std::size_t cut = 0; cut <= src.size(); cut += 7) {
      const std::string_view prefix(src.data(), cut);
      const auto symbols = locate_cuda_symbols(prefix);
      for (const cuda_symbol& s : symbols) REQUIRE(s.full_range.end <= cut);
      symbol_at(symbols, prefix, cut / 2);
    }
    for (std::size_t offset = 0; offset <= src.size(); ++offset) {
      if (const cuda_symbol* s = symbol_at(full, src, offset)) CHECK(!s->name.empty());
    }
  }
}

TEST_CASE("locator: degenerate inputs") {
  const std::vector<std::string> inputs = {
      "",
      "}}}}",
      "{{{{",
      "((((",
      "template <",
      "template <typename T",
      "__global__ void",
      "__global__ void k(",
      "__global__ void k(int",
      "__device__ float operator",
      "__device__ float operator(",
      "R\"",
      "R\"abc(",
      "R\"abcdefghijklmnopqrstuvwxyz(x)abcdefghijklmnopqrstuvwxyz\"",
      "u8\"",
      "'",
      "\"\\",
      "#define X \\",
      "#if 0\n__global__ void k() {}",
      "/* __global__ void k() {}",
      "// __global__ void k() {} \\",
      std::string("__global__ void k(int n) {\0 }", 29),
      "extern \"C\" {",
      "namespace {",
      "namespace a::b",
      "struct S : Base<",
      "k<<<1, 1>>>(",
      "\xff\xfe\x80\x80__global__ void k() {}",
      "void f() { k<<<",
  };
  for (const std::string& src : inputs) {
    CAPTURE(src);
    const auto symbols = locate_cuda_symbols(src);
    check_invariants(src, symbols);
    for (std::size_t offset = 0; offset <= src.size() + 1; ++offset) {
      symbol_at(symbols, src, offset);
    }
  }
  const std::string nul_body("__global__ void k(int n) {\0 }", 29);
  const auto symbols = locate_cuda_symbols(nul_body);
  REQUIRE(symbols.size() == 1);
  CHECK(symbols[0].full_range.end == nul_body.size());
}

TEST_CASE("locator: a deeply nested body is skipped without recursion") {
  std::string src = "__global__ void deep(int* p) ";
  src += std::string(100000, '{') + std::string(100000, '}');
  src += "\n__device__ int after() { return 1; }\n";
  const auto symbols = locate_cuda_symbols(src);
  REQUIRE(symbols.size() == 2);
  CHECK(symbols[1].name == "after");
}

TEST_CASE("cuda lexer: literals and directives are single tokens or none") {
  const std::string src =
      "#define A { \\\n  }\n"
      "x = R\"d(})d\" + u8'{' + 1'000 + 0x1p-3 + .5e+2; a::b->c\n"
      "  # pragma once\n"
      "y";
  const auto tokens = tokenize_cuda(src);
  std::vector<std::string> texts;
  for (const cuda_token& t : tokens) texts.emplace_back(t.text(src));
  CHECK(texts == std::vector<std::string>{"x", "=", "R\"d(})d\"", "+", "u8'{'", "+", "1'000",
                                          "+", "0x1p-3", "+", ".5e+2", ";", "a", "::", "b",
                                          "->", "c", "y"});
  CHECK(tokens[2].kind == cuda_token_kind::string);
  CHECK(tokens[4].kind == cuda_token_kind::character);
  CHECK(tokens[6].kind == cuda_token_kind::number);
  CHECK(tokens[13].is_scope());
  CHECK(tokens[15].is_arrow());
}

TEST_CASE("locator: sources over 4 GiB are refused with a clear error") {
  // A view that claims a huge size is never read: the size check comes first.
  const char byte = 0;
  const std::string_view huge(&byte, std::size_t{1} << 32);
  CHECK_THROWS_WITH_AS(locate_cuda_symbols(huge),
                       doctest::Contains("over the 4 GiB limit"), std::length_error);
}

}  // namespace
}  // namespace kblaster::engine::locator_test
