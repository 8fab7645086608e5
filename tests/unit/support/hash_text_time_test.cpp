// support's hash, trim and timestamps: the hash is pinned (every cache key, recording and
// cassette on disk is named by it).
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
