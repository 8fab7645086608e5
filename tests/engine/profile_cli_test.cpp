// Tests of `kblaster profile` on the recorded reports: JSON per instance and clear errors.
#include "support/run_process.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// `kblaster doctor` says which of the sections kblaster reads the installed ncu lacks (an older
// ncu has no WorkloadDistribution), from its --list-sections table; a stand-in ncu first on PATH.
TEST_CASE("kblaster doctor names the sections the ncu on PATH lacks") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kblaster-doctor-ncu-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto doctor_with = [&](const std::string& script) {
    {
      std::ofstream(dir / "ncu") << script;
    }
    fs::permissions(dir / "ncu", fs::perms::owner_all);
    const std::string path = dir.string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    return support::run_process({"/usr/bin/env", "PATH=" + path, KBLASTER_BINARY, "doctor"}, std::chrono::seconds(60)).out;
  };
  const auto older = doctor_with(
      "#!/bin/sh\n"
      "echo 'Identifier   Display Name   Enabled   Filename'\n"
      "for s in SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats MemoryWorkloadAnalysis "
      "MemoryWorkloadAnalysis_Tables MemoryWorkloadAnalysis_Chart ComputeWorkloadAnalysis InstructionStats SourceCounters; do\n"
      "  echo \"$s   Some Name   no   $s.section\"\n"
      "done\n");
  CHECK(older.find((dir / "ncu").string()) != std::string::npos);
  CHECK(older.find("lacks WorkloadDistribution of the sections kblaster reads") != std::string::npos);
  const auto broken = doctor_with("#!/bin/sh\nexit 1\n");
  CHECK(broken.find("could not list its sections") != std::string::npos);
  fs::remove_all(dir);
}
