// Tests of the cassette reader (parse_cassette) on usage counts: in range they read, out of range
// they are refused with an error that names the field (fuzz_cassette found 1.8e20 converted to
// an integer unchecked, undefined behaviour).
#include "engine/llm/cassette.h"

#include <doctest/doctest.h>

#include <string>

using namespace kblaster::engine::llm;

namespace {
std::string entry_with_usage(const std::string& usage) {
  return R"({"role": "lowering", "response": {"text": "ok"}, "usage": )" + usage + "}\n";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_cassette(text, "t.jsonl");
  } catch (const llm_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("cassette usage counts in range read as integers") {
  const auto v = parse_cassette(entry_with_usage(R"({"prompt_tokens": 120, "completion_tokens": 3e3})"), "t.jsonl");
  REQUIRE(v.size() == 1);
  CHECK(v[0].response.usage.prompt_tokens == 120);
  CHECK(v[0].response.usage.completion_tokens == 3000);
  const auto none = parse_cassette(entry_with_usage("{}"), "t.jsonl");
  REQUIRE(none.size() == 1);
  CHECK(none[0].response.usage.total() == 0);
}

TEST_CASE("cassette usage counts out of range are refused, naming the field") {
  const std::string big = error_of(entry_with_usage(R"({"prompt_tokens": 1.8e20})"));
  CHECK(big.find("t.jsonl:1") != std::string::npos);
  CHECK(big.find("usage.prompt_tokens") != std::string::npos);
  CHECK(big.find("out of range") != std::string::npos);
  CHECK(error_of(entry_with_usage(R"({"completion_tokens": 18446744073709551615})")).find("usage.completion_tokens") !=
        std::string::npos);
  CHECK(error_of(entry_with_usage(R"({"completion_tokens": -1})")).find("usage.completion_tokens") != std::string::npos);
  CHECK(error_of(entry_with_usage(R"({"prompt_tokens": 1.5})")).find("not a whole number") != std::string::npos);
  CHECK(error_of(entry_with_usage(R"({"prompt_tokens": "12"})")).find("usage.prompt_tokens is not a number") !=
        std::string::npos);
  CHECK(error_of(entry_with_usage("[]")).find("usage is not an object") != std::string::npos);
}
