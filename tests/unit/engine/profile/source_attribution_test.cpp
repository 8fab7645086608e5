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
