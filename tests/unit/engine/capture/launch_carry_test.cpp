// Carrying a rewritten launch configuration to the program's call sites: in the program's own
// terms where the rewrite computed it from the kernel's parameters, refused with the reason
// where it would hold for the captured shape only or names what the call site cannot see.
#include "engine/capture/launch_carry.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kblaster::engine;

namespace {

const std::vector<std::string> row_sum_params{"x", "out", "rows", "cols"};
const std::string generated = "dim3(2048, 1, 1), dim3(256, 1, 1), 0, kb_stream";

std::string program_with(const std::string& main_body) {
  return "__global__ void row_sum(const float* x, float* out, int rows, int cols) { /* rewritten */ }\n"
         "int main() {\n" +
         main_body + "\n}\n";
}

std::size_t code_end(const std::string& program) { return program.find("int main"); }

}  // namespace

TEST_CASE("a grid computed from the kernel's parameters is carried in the call site's terms") {
  const auto program = program_with("  row_sum<<<n_rows, 256, 0, s>>>(d_x, d_out, n_rows, n_cols);");
  const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                              "dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream");
  REQUIRE(c.refusal.empty());
  CHECK(c.sites == 1);
  // The block as generated keeps the site's own "256"; the stream is the site's.
  CHECK(c.edited.find("row_sum<<<dim3(((n_rows) + 7) / 8, 1, 1), 256, 0, s>>>(d_x, d_out, n_rows, n_cols);") != std::string::npos);
}

TEST_CASE("every call site changes, a launch in a comment does not, template arguments are kept") {
  const auto program = program_with(
      "  // row_sum<<<rows, 256>>>(x, out, rows, cols); the old launch\n"
      "  row_sum<<<a, 256>>>(p, q, a, b);\n"
      "  ns::row_sum<float><<<c, 256>>>(p, q, c, b);");
  const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                              "dim3((rows + 7) / 8), dim3(256, 1, 1), 0, kb_stream");
  REQUIRE(c.refusal.empty());
  CHECK(c.sites == 2);
  CHECK(c.edited.find("// row_sum<<<rows, 256>>>(x, out, rows, cols); the old launch") != std::string::npos);
  CHECK(c.edited.find("row_sum<<<dim3(((a) + 7) / 8), 256>>>(p, q, a, b);") != std::string::npos);
  CHECK(c.edited.find("ns::row_sum<float><<<dim3(((c) + 7) / 8), 256>>>(p, q, c, b);") != std::string::npos);
}

TEST_CASE("shared memory added by the rewrite is carried; the site's defaults stay unwritten") {
  const auto program = program_with("  row_sum<<<rows, 256>>>(x, out, rows, cols);");
  const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                              "dim3(2048, 1, 1), dim3(256, 1, 1), cols * sizeof(float), kb_stream");
  REQUIRE(c.refusal.empty());
  CHECK(c.edited.find("row_sum<<<rows, 256, (cols) * sizeof(float)>>>(x, out, rows, cols);") != std::string::npos);
}

TEST_CASE("a constant grid replaces a constant grid, never a computed one") {
  SUBCASE("the site's grid is a constant too (a grid-stride kernel): carried") {
    const auto program = program_with("  row_sum<<<128, 256>>>(x, out, rows, cols);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, "dim3(128, 1, 1), dim3(256, 1, 1), 0, kb_stream",
                                "dim3(264, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    REQUIRE(c.refusal.empty());
    CHECK(c.edited.find("row_sum<<<dim3(264, 1, 1), 256>>>") != std::string::npos);
  }
  SUBCASE("the site computes it: refused, saying why") {
    const auto program = program_with("  row_sum<<<rows, 256>>>(x, out, rows, cols);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                                "dim3(256, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    CHECK(c.edited.empty());
    CHECK(c.refusal.find("is a constant computed for the captured shape, where your call site computes it (`rows`)") !=
          std::string::npos);
  }
}

TEST_CASE("blocks counted from the launcher's grid are carried with the site's grid: every shape, not the captured one") {
  // Block-size tuning on a captured launch writes the new grid from the launcher's `dim3(2048, 1,
  // 1)`. Carried with the 2048 itself, the program launched 2048 * 256 / 64 blocks whatever its
  // rows (H200, 2026-11-29: `relu_rowsum<<<(32 * 128 + 63) / 64, 64>>>` in rowsum_loop.cu).
  const std::string tuned = "static_cast<unsigned>((static_cast<unsigned long long>((dim3(2048, 1, 1)).x) * 256 + 63) / 64), 64, 0, kb_stream";
  SUBCASE("a computed scalar grid") {
    const auto program = program_with("  row_sum<<<(n + 255) / 256, 256>>>(d_x, d_out, n, m);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated, tuned);
    REQUIRE(c.refusal.empty());
    INFO(c.edited);
    CHECK(c.edited.find("row_sum<<<static_cast<unsigned>((static_cast<unsigned long long>(dim3((n + 255) / 256).x) * 256 + 63) / 64), "
                        "64>>>(d_x, d_out, n, m);") != std::string::npos);
  }
  SUBCASE("a dim3 the site writes with only an x") {
    const auto program = program_with("  row_sum<<<dim3(blocks), dim3(256)>>>(d_x, d_out, n, m);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated, tuned);
    REQUIRE(c.refusal.empty());
    CHECK(c.edited.find("dim3(dim3(blocks)).x") != std::string::npos);
  }
  SUBCASE("a name the program declares a dim3 (its y may be more than 1 for other shapes): refused") {
    const auto program = program_with("  dim3 grid(n / 256, m);\n  row_sum<<<grid, 256>>>(d_x, d_out, n, m);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated, tuned);
    CHECK(c.edited.empty());
    CHECK(c.refusal.find("constant computed for the captured shape") != std::string::npos);
  }
  SUBCASE("the captured number itself, cast: refused as the constant it is") {
    const auto program = program_with("  row_sum<<<(n + 255) / 256, 256>>>(d_x, d_out, n, m);");
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                                "static_cast<unsigned>((static_cast<unsigned long long>(2048) * 256 + 63) / 64), 64, 0, kb_stream");
    CHECK(c.edited.empty());
    CHECK(c.refusal.find("constant computed for the captured shape") != std::string::npos);
  }
}

TEST_CASE("names only the launcher knows, argument side effects and other streams are refused") {
  const auto program = program_with("  row_sum<<<rows, 256>>>(x, out, rows++, cols);");
  SUBCASE("a launcher local") {
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                                "dim3(kb_blocks, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    CHECK(c.refusal.find("uses `kb_blocks`, which only the launcher knows") != std::string::npos);
  }
  SUBCASE("an argument evaluated again") {
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                                "dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    CHECK(c.refusal.find("`rows++` has side effects") != std::string::npos);
  }
  SUBCASE("another stream") {
    const auto c = carry_launch(program, code_end(program), "row_sum", row_sum_params, generated,
                                "dim3(2048, 1, 1), dim3(256, 1, 1), 0, my_stream");
    CHECK(c.refusal.find("another stream") != std::string::npos);
  }
  SUBCASE("a name the rewritten code defines is visible at the call site") {
    const auto defined = "constexpr int kRowsPerBlock = 8;\n" + program_with("  row_sum<<<rows, 256>>>(x, out, rows, cols);");
    const auto c = carry_launch(defined, code_end(defined), "row_sum", row_sum_params, generated,
                                "dim3((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    REQUIRE(c.refusal.empty());
    CHECK(c.edited.find("row_sum<<<dim3(((rows) + kRowsPerBlock - 1) / kRowsPerBlock, 1, 1), 256>>>") != std::string::npos);
  }
  SUBCASE("no call site") {
    const auto none = program_with("  launch_it();");
    const auto c = carry_launch(none, code_end(none), "row_sum", row_sum_params, generated,
                                "dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream");
    CHECK(c.refusal.find("no call site") != std::string::npos);
  }
}

TEST_CASE("top-level commas split a configuration; nested ones do not") {
  CHECK(split_top_level("dim3(a, b), f(x, y)[1], {1, 2}") == std::vector<std::string>{"dim3(a, b)", "f(x, y)[1]", "{1, 2}"});
  CHECK(split_top_level("  grid ,block  ") == std::vector<std::string>{"grid", "block"});
  CHECK(split_top_level("").empty());
}
