// The block of a launch written in the source, when it is a constant expression.
#include "engine/source/launch_block.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

TEST_CASE("constant_value: literals, arithmetic, macros, const integers and dim3") {
  const std::string src =
      "#define BLOCK 256\n#define TILE (BLOCK / 16)  // a comment\n#define SQUARE(x) ((x) * (x))\n"
      "constexpr int warps = 4;\nstatic const unsigned threads{warps * 32};\nint runtime = 7;\n"
      "#define LOOP LOOP\n";
  CHECK(constant_value(src, "256") == 256);
  CHECK(constant_value(src, "0x100u") == 256);
  CHECK(constant_value(src, "1'024") == 1024);
  CHECK(constant_value(src, "(1000 + 23) / 4 % 7") == (1023 / 4) % 7);
  CHECK(constant_value(src, "BLOCK") == 256);
  CHECK(constant_value(src, "TILE") == 16);
  CHECK(constant_value(src, "dim3(TILE, TILE)") == 256);
  CHECK(constant_value(src, "threads") == 128);
  CHECK(constant_value(src, "warps * 32") == 128);
  CHECK_FALSE(constant_value(src, "runtime"));   // not const: a runtime value
  CHECK_FALSE(constant_value(src, "n"));          // unknown
  CHECK_FALSE(constant_value(src, "SQUARE(4)"));  // function-like macros are not expanded here
  CHECK_FALSE(constant_value(src, "LOOP"));       // a cycle ends
  CHECK_FALSE(constant_value(src, "1 / 0"));
  CHECK_FALSE(constant_value(src, "256 256"));
}

TEST_CASE("constant_launch_block: the launches of a kernel whose block is constant") {
  const std::string src =
      "#define B 128\n__global__ void k(float* x, int n) {}\n__global__ void other(float* x) {}\n"
      "void run(float* x, int n, int b) {\n"
      "  ops::k<<<(n + 255) / 256, 256>>>(x, n);\n"
      "  dim3 blk(16, 8);\n  other<<<1, blk, 0, 0>>>(x);\n"
      "  k2<<<1, b>>>(x, n);\n}\n";
  const auto k = constant_launch_block(src, "k");
  REQUIRE(k);
  CHECK(k->threads == 256);
  CHECK(k->configuration == "(n + 255) / 256, 256");
  const auto other = constant_launch_block(src, "other");
  REQUIRE(other);
  CHECK(other->threads == 128);
  CHECK_FALSE(constant_launch_block(src, "k2"));       // a runtime block
  CHECK_FALSE(constant_launch_block(src, "missing"));  // no launch
  // Launches that disagree name no block.
  CHECK_FALSE(constant_launch_block("void f() { k<<<1, 64>>>(); k<<<1, B>>>(); }\n#define B 128\n", "k"));
  CHECK(constant_launch_block("void f() { k<<<1, 64>>>(); k<<<2, 64>>>(); }", "k")->threads == 64);
}
