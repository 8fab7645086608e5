// UTF-16 position mapping, including astral-plane characters and CRLF.
#include "protocol/position.h"

#include <doctest/doctest.h>

using namespace kblaster::protocol;

TEST_CASE("ASCII positions map to bytes") {
  const std::string text = "ab\ncde\n";
  line_index lines(text);
  CHECK(lines.offset_of({1, 2}) == 5);
  CHECK(lines.position_of(5) == position{1, 2});
  CHECK(lines.line_count() == 3);
}

TEST_CASE("astral-plane characters count as two UTF-16 units and four bytes") {
  const std::string text = "a\xF0\x9F\x98\x80" "b\n";  // a😀b
  line_index lines(text);
  CHECK(lines.offset_of({0, 1}) == 1);   // before the emoji
  CHECK(lines.offset_of({0, 3}) == 5);   // after it: 1 + 2 units, 1 + 4 bytes
  CHECK(lines.offset_of({0, 4}) == 6);   // after b
  CHECK(lines.offset_of({0, 2}) == 1);   // inside the surrogate pair: the code point's start
  CHECK(lines.position_of(5) == position{0, 3});
  CHECK(utf16_length("\xF0\x9F\x98\x80") == 2);
}

TEST_CASE("BMP multi-byte characters are one unit") {
  const std::string text = "\xC3\xA9\xE2\x82\xAC|";  // é€|
  line_index lines(text);
  CHECK(lines.offset_of({0, 2}) == 5);
  CHECK(lines.position_of(5) == position{0, 2});
}

TEST_CASE("characters past the end of a line clamp to the line end, before CRLF") {
  const std::string text = "abc\r\nxy";
  line_index lines(text);
  CHECK(lines.offset_of({0, 99}) == 3);
  CHECK(lines.offset_of({1, 99}) == 7);
  CHECK(lines.offset_of({9, 0}) == 7);
}

TEST_CASE("round trip over every offset of mixed text") {
  const std::string text = "x\xF0\x9F\x8E\x89y\n\xC3\xA9z\n\n\xE2\x82\xAC";
  line_index lines(text);
  for (std::size_t off = 0; off <= text.size(); ++off) {
    const unsigned char c = off < text.size() ? static_cast<unsigned char>(text[off]) : 0;
    if ((c & 0xC0) == 0x80) continue;  // not a code point boundary
    CAPTURE(off);
    CHECK(lines.offset_of(lines.position_of(off)) == off);
  }
}

TEST_CASE("a position's line and character are LSP uintegers: anything else is the client's error") {
  const auto ok = nlohmann::json::parse(R"({"line": 3, "character": 2147483647})").get<position>();
  CHECK(ok.line == 3);
  CHECK(ok.character == 2147483647);
  // Found by fuzz_lsp_params: 1.3e56 was converted to int (undefined behaviour).
  for (const char* bad : {R"({"line": 3, "character": 133333333333333333333333333333333333333333333333333333333})",
                          R"({"line": -1, "character": 0})", R"({"line": 2147483648, "character": 0})",
                          R"({"line": 1.5, "character": 0})", R"({"line": "1", "character": 0})"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(nlohmann::json::parse(bad).get<position>(), nlohmann::json::type_error);
  }
}
