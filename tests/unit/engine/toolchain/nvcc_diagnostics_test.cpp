// Tests of parse_nvcc_diagnostics on line and column numbers: ordinary ones read, ones too large
// for an int read as 0, unknown (fuzz_nvcc_diagnostics found std::stoi's out_of_range escaping).
#include "engine/toolchain/nvcc_diagnostics.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

TEST_CASE("nvcc diagnostics: line and column numbers") {
  const auto ds = parse_nvcc_diagnostics(
      "kernel.cu(12): error: identifier \"blockIdx_x\" is undefined\n"
      "host.cpp:7:5: warning: unused variable\n"
      "ptxas /tmp/x.ptx, line 45; error   : bad\n");
  REQUIRE(ds.size() == 3);
  CHECK(ds[0].line == 12);
  CHECK(ds[0].tool == "nvcc");
  CHECK(ds[1].line == 7);
  CHECK(ds[1].column == 5);
  CHECK(ds[2].line == 45);
}

TEST_CASE("nvcc diagnostics: numbers too large for an int read as unknown, the diagnostic kept") {
  const auto ds = parse_nvcc_diagnostics(
      "kernel.cu(2222222222222222222212): error: identifier \"x\" is undefined\n"
      "host.cpp:99999999999:99999999999: error: too far\n"
      "ptxas /tmp/x.ptx, line 3000000000; warning : far\n");
  REQUIRE(ds.size() == 3);
  CHECK(ds[0].line == 0);
  CHECK(ds[0].message == "identifier \"x\" is undefined");
  CHECK(ds[1].line == 0);
  CHECK(ds[1].column == 0);
  CHECK(ds[1].message == "too far");
  CHECK(ds[2].line == 0);
  CHECK(ds[2].severity == diagnostic_severity::warning);
}
