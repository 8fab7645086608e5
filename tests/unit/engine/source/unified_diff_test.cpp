// The unified diff of two source texts (engine/source/unified_diff): hunks, context, insertion
// into an empty text, and nothing for equal texts.
#include "engine/source/unified_diff.h"

#include <doctest/doctest.h>

using kblaster::engine::unified_diff;

TEST_CASE("unified_diff: hunks, context and equal texts") {
  CHECK(unified_diff("a\nb\n", "a\nb\n", "x", "y").empty());
  const auto d = unified_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", "a/f", "b/f");
  CHECK(d == "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
  const auto ins = unified_diff("", "x\n", "a/f", "b/f");
  CHECK(ins == "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n");
}
