// Helpers for the kernel locator tests: fixture loading and exact, field-by-field checks.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/source/kernel_locator.h"

namespace kblaster::engine::locator_test {

/// The text of tests/fixtures/locator/<name>.
inline std::string load_fixture(const std::string& name) {
  const std::string path = std::string(KBLASTER_FIXTURES_DIR) + "/locator/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The source text a range covers.
inline std::string_view covered(std::string_view source, byte_range r) {
  REQUIRE(r.begin <= r.end);
  REQUIRE(r.end <= source.size());
  return source.substr(r.begin, r.end - r.begin);
}

/// Offset of `anchor`, which must occur exactly once in `source` (so a test can't pass by
/// matching the wrong copy).
inline std::size_t unique_offset(std::string_view source, std::string_view anchor) {
  const std::size_t at = source.find(anchor);
  REQUIRE_MESSAGE(at != std::string_view::npos, "anchor not found: " << anchor);
  REQUIRE_MESSAGE(source.find(anchor, at + 1) == std::string_view::npos,
                  "anchor not unique: " << anchor);
  return at;
}

/// What one symbol must be. Anchors are unique snippets of the fixture.
struct expected_symbol {
  std::string qualified_name;
  cuda_symbol_kind kind = cuda_symbol_kind::global_kernel;
  std::string name_anchor;  // starts with the name token
  std::string full_begin;   // starts where full_range starts
  std::string full_end;     // ends where full_range ends
  std::string signature;
  std::vector<std::string> template_parameters = {};
  std::string launch_bounds = {};
  bool extern_c = false;
  bool is_definition = true;

  expected_symbol with_template(std::vector<std::string> params) const {
    expected_symbol e = *this;
    e.template_parameters = std::move(params);
    return e;
  }
  expected_symbol with_bounds(std::string bounds) const {
    expected_symbol e = *this;
    e.launch_bounds = std::move(bounds);
    return e;
  }
  expected_symbol c_linkage() const {
    expected_symbol e = *this;
    e.extern_c = true;
    return e;
  }
  expected_symbol declaration() const {
    expected_symbol e = *this;
    e.is_definition = false;
    return e;
  }
};

/// An expected definition with no template parameters, launch bounds or C linkage.
inline expected_symbol expect(std::string qualified_name, cuda_symbol_kind kind,
                              std::string name_anchor, std::string full_begin,
                              std::string full_end, std::string signature) {
  expected_symbol e;
  e.qualified_name = std::move(qualified_name);
  e.kind = kind;
  e.name_anchor = std::move(name_anchor);
  e.full_begin = std::move(full_begin);
  e.full_end = std::move(full_end);
  e.signature = std::move(signature);
  return e;
}

inline constexpr cuda_symbol_kind kernel = cuda_symbol_kind::global_kernel;
inline constexpr cuda_symbol_kind device = cuda_symbol_kind::device_function;
inline constexpr cuda_symbol_kind launcher = cuda_symbol_kind::host_launcher;

/// Checks that `symbols` are exactly `expected`, in order, every field.
inline void check_symbols(std::string_view source, const std::vector<cuda_symbol>& symbols,
                          const std::vector<expected_symbol>& expected) {
  std::vector<std::string> got;
  std::vector<std::string> want;
  for (const cuda_symbol& s : symbols) got.push_back(s.qualified_name);
  for (const expected_symbol& e : expected) want.push_back(e.qualified_name);
  REQUIRE(got == want);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const cuda_symbol& s = symbols[i];
    const expected_symbol& e = expected[i];
    CAPTURE(e.qualified_name);
    const std::size_t sep = e.qualified_name.rfind("::");
    CHECK(s.name == (sep == std::string::npos ? e.qualified_name : e.qualified_name.substr(sep + 2)));
    CHECK(s.kind == e.kind);
    CHECK(covered(source, s.name_range) == s.name);
    CHECK(s.name_range.begin == unique_offset(source, e.name_anchor));
    CHECK(s.full_range.begin == unique_offset(source, e.full_begin));
    CHECK(s.full_range.end == unique_offset(source, e.full_end) + e.full_end.size());
    CHECK(covered(source, s.full_range).back() == (e.is_definition ? '}' : ';'));
    CHECK(s.signature == e.signature);
    CHECK(s.template_parameters == e.template_parameters);
    CHECK(s.launch_bounds == e.launch_bounds);
    CHECK(s.extern_c == e.extern_c);
    CHECK(s.is_definition == e.is_definition);
  }
}

}  // namespace kblaster::engine::locator_test
