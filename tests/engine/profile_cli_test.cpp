// Tests of `kblaster profile` on the recorded reports: JSON per instance and clear errors.
#include "support/run_process.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace support = kblaster::support;

namespace {
std::string fx(const std::string& p) { return std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/" + p; }
support::process_result run_kblaster(std::vector<std::string> args) {
  args.insert(args.begin(), KBLASTER_BINARY);
  return support::run_process(args, std::chrono::seconds(60));
}
}  // namespace

TEST_CASE("kblaster profile --ncu-csv --json: name, primary and secondary per instance") {
  const auto r = run_kblaster({"profile", "--ncu-csv", fx("vadd.details.csv"), "--ncu-raw", fx("vadd.raw.csv"), "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["kernels"].size() == 3);
  for (const auto& k : j["kernels"]) {
    CHECK(k["name"] == "vadd(const float *, const float *, float *, int)");
    CHECK(k["primary"] == "memory_bound_dram");
    CHECK(k["secondary"].is_array());
  }
  const auto t = nlohmann::json::parse(run_kblaster({"profile", "--ncu-csv", fx("transpose_conflicts.details.csv"), "--json"}).out);
  CHECK(t["kernels"][0]["secondary"][0] == "shared_memory_bank_conflicts");
}

TEST_CASE("kblaster profile human output names the state, evidence and findings") {
  const auto r = run_kblaster({"profile", "--ncu-csv", fx("atomic_sum.details.csv")});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("latency_bound") != std::string::npos);
  CHECK(r.out.find("atomic_contention") != std::string::npos);
  CHECK(r.out.find("top findings") != std::string::npos);
}

TEST_CASE("kblaster profile: bad input is a clear error, not a crash") {
  const auto missing = run_kblaster({"profile", "--ncu-csv", "/nonexistent.csv"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("cannot read") != std::string::npos);
  const auto wrong = run_kblaster({"profile", "--ncu-csv", fx("kernels.cu")});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("not an Nsight Compute details page") != std::string::npos);
  const auto nothing = run_kblaster({"profile"});
  CHECK(nothing.exit_code == 2);
  const auto both = run_kblaster({"profile", "--static", "--ncu-csv", fx("vadd.details.csv")});
  CHECK(both.exit_code != 0);
}
