// support's hash, trim, numbers as text and timestamps: the hash is pinned (every cache key,
// recording and cassette on disk is named by it).
#include "support/hash.h"
#include "support/text.h"
#include "support/time.h"

#include <doctest/doctest.h>

using namespace kblaster::support;

TEST_CASE("the content hash is pinned: FNV-1a 64 with the project's offset basis") {
  // Every nvcc cache entry, recorded GPU result and cassette is named by these values.
  CHECK(fnv1a("") == 1469598103934665603ull);
  CHECK(fnv1a_hex("") == "14650fb0739d0383");
  CHECK(fnv1a_hex("a") == "44bd8ad473cd9906");
  CHECK(fnv1a_hex("foobar") == "88fad7c0a8ff07f2");
  CHECK(fnv1a("bar", fnv1a("foo")) == fnv1a("foobar"));
  // With FNV's published offset basis it is the published FNV-1a (test vector for "a").
  CHECK(fnv1a("a", 14695981039346656037ull) == 0xaf63dc4c8601ec8cull);
  CHECK(hex64(0x1) == "0000000000000001");
  static_assert(fnv1a("a") == fnv1a("a", fnv1a_offset), "usable at compile time");
}

TEST_CASE("trim removes ASCII whitespace, or the characters asked for") {
  CHECK(trim("  x y \t\r\n") == "x y");
  CHECK(trim(" \n\t ").empty());
  CHECK(trim("").empty());
  CHECK(trim("\nx\n", " \t") == "\nx\n");
  CHECK(trim("\t 5 ", " \t") == "5");
}

TEST_CASE("UTC timestamps: ISO 8601 with Z, seconds or milliseconds") {
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795468442123));  // 2026-11-23
  CHECK(utc_timestamp(t) == "2026-11-23T21:14:02Z");
  CHECK(utc_timestamp(t, timestamp_precision::milliseconds) == "2026-11-23T21:14:02.123Z");
  CHECK(utc_now().size() == 20);
  CHECK(utc_now(timestamp_precision::milliseconds).size() == 24);
}

TEST_CASE("numbers and durations: fixed decimals, significant digits, units") {
  CHECK(fixed_text(1.23456, 2) == "1.23");
  CHECK(fixed_text(2.5, 0) == "2");  // rounds half to even, as printf does
  CHECK(significant_text(0.000123456, 4) == "0.0001235");
  CHECK(significant_text(1234567.0, 3) == "1.23e+06");
  CHECK(significant_text(0.5, 6) == "0.5");
  CHECK(times_text(1.5, 2) == "1.50x");
  CHECK(percent_text(42.4, 0) == "42%");
  CHECK(us_text(12.34, 1) == "12.3 us");
  CHECK(ms_text(0.01234, 4) == "0.0123 ms");
  CHECK(seconds_text(1.5, 2) == "1.50 s");
  CHECK(seconds_text(0.2) == "0.2 s");
  CHECK(seconds_text(1500) == "1500 s");
  CHECK(count_text(1, "candidate") == "1 candidate");
  CHECK(count_text(3, "candidate") == "3 candidates");
}
