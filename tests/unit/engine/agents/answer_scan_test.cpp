// The answer parser's scans find exactly what the regexes they replaced found: each is checked
// against its regex (kept here as the specification) on chosen cases and on many random texts
// made of the pieces that matter to it.
#include "engine/agents/answer_parser.h"
#include "engine/agents/answer_scan.h"

#include <doctest/doctest.h>

#include <random>
#include <regex>

namespace scan = kblaster::engine::agents::scan;

namespace {

const std::regex python_def_regex(R"((^|\n)\s*def \w+\(.*\)\s*(->.*)?:)");
const std::regex code_start_regex(
    R"(^\s*(#include|#define|#pragma|//|/\*|extern\s|template\s*<|__global__|__device__|namespace\s|static\s|constexpr\s|typedef\s|using\s|struct\s|#if))");
const std::regex refusal_regex(
    R"((^|\n)\s*(I'm sorry|I am sorry|Sorry,|I can(not|'t|’t) (help|assist|comply|provide|do that|write)|I won'?t|I'm not able to|I am not able to|I'm unable to|I am unable to|As an AI))",
    std::regex::icase);
const std::regex kernel_regex(R"(__global__[^;{(]*?\b(\w+)\s*\()");

std::vector<std::string> kernels_by_regex(const std::string& code) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kernel_regex); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

void check_same(const std::string& text) {
  CAPTURE(text);
  CHECK(scan::python_def(text) == std::regex_search(text, python_def_regex));
  CHECK(scan::starts_like_code(text) == std::regex_search(text, code_start_regex));
  CHECK(scan::refusal(text) == std::regex_search(text, refusal_regex));
  CHECK(scan::global_kernel_names(text) == kernels_by_regex(text));
}

/// `count` texts of up to `max_pieces` pieces drawn from `pieces`, the same every run.
std::vector<std::string> random_texts(const std::vector<std::string>& pieces, int count, int max_pieces) {
  std::mt19937 random(21);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(0, max_pieces);
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) {
    std::string t;
    for (int n = length(random); n > 0; --n) t += pieces[piece(random)];
    texts.push_back(std::move(t));
  }
  return texts;
}

}  // namespace

TEST_CASE("answer scans: chosen cases agree with the regexes") {
  for (const char* text : {
           "", "def f(x):", "  def f(x) -> int:\n", "x = 1\ndef f():", "x def f():", "def f(x)\n  :", "def f(x) ->\n:",
           "def (x):", "def f (x):", "def f(x)) :", "def f(x)\r:", "\r\ndef f(a, b) -> Tuple[int, int]:", "def f(x)->:",
           "  #include <x>", "template <int N>", "template<", "templatex<", "extern\"C\"", "extern \"C\"", "static\tint",
           "statics", "\n\n__global__ void k()", "text\n#include", "#ifdef X", "/* c */", "using namespace std;",
           "I'm sorry", "i'M SORRY, no", "Sure.\n  I can't help", "I cannot  help", "I can’t write", "I cant help",
           "I won't", "I wont", "I won''t", "ok I won't", "\n\t As an ai model", "Sorry, no", "Sorry no",
           "__global__ void k(int)", "__global__ void k (int)", "__global__ void k\n(", "__global__k(", "__global__ (",
           "__global__ void; k(", "__global__ __global__ void k(", "__global___global__ void k(", "__global__ a b c(",
           "__global__ void k(){} __global__ void l(){}", "__global__ void k(; __global__ void m(", "__global__ x{ y(",
           "__global__ 9a(", "__global__ void ::k(", "__global__ void\tk\t(\n", "template<> __global__ void k<1>(",
       })
    check_same(text);
}

TEST_CASE("answer scans: random texts agree with the regexes") {
  const std::vector<std::string> pieces = {
      "def ", "def", " ", "  ", "\n", "\r", "\t", "\v", "(", ")", ":", "->", "-", ">", "x", "_", "9", "f", "int", ",",
      "#include", "#if", "//", "/*", "extern", "template", "<", "static", "using", "struct", "__device__", "__global__",
      "void", ";", "{", "}", "k", "::", "I'm sorry", "i AM SORRY", "Sorry,", "sorry", "I can", "not", "'t", "\u2019t",
      " help", " do that", " write", "I won", "'", "t", "As an AI", "as an ai", "I'm unable to", "I am not able to"};
  for (const auto& text : random_texts(pieces, 4000, 14)) check_same(text);
}

TEST_CASE("answer scans: long texts stay linear") {
  // What made the regexes slow: many candidates on one long line, each scanned to its end.
  const std::string arrows = "def f(" + std::string(20000, ')') + " ->" + std::string(20000, ' ');
  CHECK_FALSE(scan::python_def(arrows));
  std::string globals;
  for (int i = 0; i < 5000; ++i) globals += "__global__ ";
  CHECK(scan::global_kernel_names(globals + ";").empty());
  CHECK(scan::global_kernel_names(globals + "k(").size() == 1);
}
