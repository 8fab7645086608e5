// Tests of the source page parser and of source attribution on -lineinfo recordings.
#include "engine/profile/ncu_csv_parser.h"
#include "support/files.h"
#include "engine/profile/ncu_source_parser.h"
#include "engine/profile/source_attribution.h"

#include <doctest/doctest.h>

#include <string>

using namespace kblaster::engine;

namespace {
std::string fx(const std::string& p) { return kblaster::support::read_file(std::string(KBLASTER_FIXTURES_DIR) + "/" + p); }
}  // namespace

TEST_CASE("cuda,sass page of matmul_naive: the k-loop line takes the stalls and excessive sectors") {
  const auto pages = parse_ncu_source(fx("ncu-h100-lineinfo/matmul_naive.lineinfo.source_cuda_sass.csv"));
  REQUIRE(pages.size() == 1);
  const auto& p = pages[0];
  CHECK(p.kernel == "matmul_naive(const float *, const float *, float *, int)");
  CHECK(p.file.find("kernels.cu") != std::string::npos);
  CHECK(p.has_metrics);
  CHECK(p.lines.size() >= 4);
  CHECK_FALSE(p.instructions.empty());
  const auto hot = attribute_hot_lines(p);
  REQUIRE_FALSE(hot.empty());
  CHECK(hot[0].reason == hot_reason::stall_samples);
  CHECK(hot[0].line == 14);
  CHECK(hot[0].share > 0.9);
  CHECK(hot[0].top_stall == "stall_lg");
  bool sectors = false;
  for (const auto& h : hot) sectors |= (h.reason == hot_reason::uncoalesced_global && h.line == 14 && h.amount == 3221225472.0);
  CHECK(sectors);
}

TEST_CASE("cuda,sass page of transpose_conflicts: bank conflicts on the shared-memory lines") {
  const auto pages = parse_ncu_source(fx("ncu-h100-lineinfo/transpose_conflicts.lineinfo.source_cuda_sass.csv"));
  REQUIRE(pages.size() == 1);
  const auto hot = attribute_hot_lines(pages[0]);
  int conflict_lines = 0;
  for (const auto& h : hot)
    if (h.reason == hot_reason::shared_bank_conflicts) {
      CHECK((h.line == 44 || h.line == 47));
      ++conflict_lines;
    }
  CHECK(conflict_lines == 2);
}

TEST_CASE("sass page without line info: hottest instructions, no line numbers") {
  const auto pages = parse_ncu_source(fx("ncu-h100/matmul_naive.source_sass.csv"));
  REQUIRE(pages.size() == 1);
  CHECK(pages[0].lines.empty());
  CHECK(pages[0].instructions.size() > 100);
  const auto hot = attribute_hot_lines(pages[0]);
  REQUIRE_FALSE(hot.empty());
  CHECK(hot[0].line == 0);
  CHECK(hot[0].text.find("LDG") != std::string::npos);
}

TEST_CASE("cuda page holds source text only: no attribution") {
  const auto pages = parse_ncu_source(fx("ncu-h100/matmul_naive.source_cuda.csv"));
  REQUIRE(pages.size() == 1);
  CHECK_FALSE(pages[0].has_metrics);
  CHECK(pages[0].lines.size() > 90);
  CHECK(attribute_hot_lines(pages[0]).empty());
  CHECK_THROWS_AS(parse_ncu_source("nothing here\n"), ncu_parse_error);
}

TEST_CASE("a kernel whose stalls are in a CUDA header's inlined code: the user's line, with where it went") {
  // The page's first block is cuda_fp16.hpp (lines 549 and 708); ranking it alone put "line 708"
  // of the header on the user's file.
  const auto pages = parse_ncu_source(fx("ncu-h200-inlined/half_axpy.source_cuda_sass.csv"));
  REQUIRE(pages.size() == 2);
  CHECK(is_toolkit_source(pages[0].file));
  CHECK_FALSE(is_toolkit_source(pages[1].file));
  const auto hot = attribute_kernel_hot_lines({&pages[0], &pages[1]});
  REQUIRE_FALSE(hot.empty());
  CHECK(hot[0].reason == hot_reason::stall_samples);
  CHECK(hot[0].file == pages[1].file);
  CHECK(hot[0].line == 7);
  CHECK(hot[0].text == "float xv = __half2float(x[i]);");
  CHECK(hot[0].inlined_from == "cuda_fp16.hpp:708");
  CHECK(hot[0].inlined_share > 0.9);  // 3225 of line 7's 3397 samples are the inlined HADD2.F32
  for (const auto& h : hot) {
    CHECK(h.file == pages[1].file);
    CHECK(h.line != 708);
    CHECK(h.line != 549);
  }
  // The order of the blocks does not matter: the kernel's own file holds its entry.
  const auto reversed = attribute_kernel_hot_lines({&pages[1], &pages[0]});
  REQUIRE_FALSE(reversed.empty());
  CHECK(reversed[0].line == 7);
  CHECK(reversed[0].inlined_from == "cuda_fp16.hpp:708");
}

TEST_CASE("a line whose own code takes its samples names no inlined origin") {
  const auto pages = parse_ncu_source(fx("ncu-h100-lineinfo/matmul_naive.lineinfo.source_cuda_sass.csv"));
  REQUIRE(pages.size() == 1);
  const auto hot = attribute_kernel_hot_lines({&pages[0]});
  REQUIRE_FALSE(hot.empty());
  CHECK(hot[0].line == 14);
  for (const auto& h : hot) CHECK(h.inlined_from.empty());
}

TEST_CASE("toolkit sources are told from the user's") {
  CHECK(is_toolkit_source("/usr/local/cuda/targets/x86_64-linux/include/cuda_fp16.hpp"));
  CHECK(is_toolkit_source("/usr/local/cuda-13.0/include/cub/block/block_reduce.cuh"));
  CHECK(is_toolkit_source("/opt/conda/targets/x86_64-linux/include/cuda_bf16.hpp"));
  CHECK(is_toolkit_source("/usr/include/c++/12/cmath"));
  CHECK_FALSE(is_toolkit_source("/home/ana/jacobi/jacobi2d.cu"));
  CHECK_FALSE(is_toolkit_source("/home/ana/jacobi/include/stencil.cuh"));
}
