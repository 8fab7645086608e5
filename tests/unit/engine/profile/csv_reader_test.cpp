// csv_reader reads runs of text whole; it must read every text exactly as the reader it
// replaced, which went a character at a time and is kept here as the specification.
#include "engine/profile/csv_reader.h"

#include <doctest/doctest.h>

#include <random>

using kblaster::engine::csv_reader;

namespace {

struct record {
  std::vector<std::string> fields;
  std::size_t line;
  bool operator==(const record&) const = default;
};

/// The reader as it was before, a character at a time: every record and the line it starts on.
std::vector<record> read_char_by_char(std::string_view text) {
  std::vector<record> out;
  std::size_t pos = 0, line = 1;
  while (pos < text.size()) {
    record r{{}, line};
    std::string field;
    bool quoted = false, was_quoted = false;
    while (pos < text.size()) {
      const char c = text[pos++];
      if (quoted) {
        if (c == '"') {
          if (pos < text.size() && text[pos] == '"') {
            field.push_back('"');
            ++pos;
          } else {
            quoted = false;
          }
        } else {
          if (c == '\n') ++line;
          field.push_back(c);
        }
        continue;
      }
      if (c == '"' && !was_quoted && field.empty()) {
        quoted = was_quoted = true;
      } else if (c == ',') {
        r.fields.push_back(std::move(field));
        field.clear();
        was_quoted = false;
      } else if (c == '\n') {
        ++line;
        break;
      } else if (c != '\r') {
        field.push_back(c);
      }
    }
    r.fields.push_back(std::move(field));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<record> read(std::string_view text) {
  std::vector<record> out;
  csv_reader reader(text);
  std::vector<std::string> fields;
  while (reader.next(fields)) out.push_back({fields, reader.line()});
  return out;
}

}  // namespace

TEST_CASE("csv_reader reads as the character-at-a-time reader did: chosen texts") {
  for (const char* text : {"", "a", "a,b\n", "\"a,b\",c", "\"x\"\"y\"", "\"open", "\"two\nlines\"\nnext", "a\"b\",c",
                           "\"q\"tail\"more,\"", "\"\"\"\"", "\"\"x\"", "\r\r\n,\r,", "\n\n", "\"a\r\nb\"\r\n", ",,,"}) {
    CAPTURE(text);
    CHECK(read(text) == read_char_by_char(text));
  }
}

TEST_CASE("csv_reader reads as the character-at-a-time reader did: random texts") {
  std::mt19937 random(21);
  const std::string alphabet = "\"\",,\n\r ab";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 40);
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    for (int n = length(random); n > 0; --n) text += alphabet[pick(random)];
    CAPTURE(text);
    CHECK(read(text) == read_char_by_char(text));
  }
}
