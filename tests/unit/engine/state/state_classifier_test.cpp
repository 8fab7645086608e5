// Tests of the state classifier on every recorded H100 kernel, the state matcher and the
// summaries.
#include "engine/profile/ncu_csv_parser.h"
#include "support/files.h"
#include "engine/state/profile_pipeline.h"
#include "engine/state/profile_summary.h"
#include "engine/state/state_classifier.h"
#include "engine/state/state_naming.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace kblaster::engine;

namespace {

std::string dir() { return std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/"; }

std::vector<performance_signature> classify_fixture(const std::string& name, bool with_raw = true) {
  auto report = parse_ncu_details(kblaster::support::read_file(dir() + name + ".details.csv"));
  if (with_raw) merge_ncu_raw(report, kblaster::support::read_file(dir() + name + ".raw.csv"));
  return classify_report(report);
}


}  // namespace

TEST_CASE("the nine recorded kernels get the states their README describes") {
  SUBCASE("vadd: DRAM-bound, three instances") {
    const auto s = classify_fixture("vadd");
    REQUIRE(s.size() == 3);
    for (const auto& k : s) {
      CHECK(k.primary == "memory_bound_dram");
      CHECK(k.memory_level == "dram");
      CHECK(k.sol_band == "one_sided");  // DRAM 77 %, SM 41 %: one unit busy, under 80 %
      CHECK(k.secondary.empty());
    }
  }
  SUBCASE("matmul_naive: uncoalesced global loads, L1-bound") {
    const auto k = classify_fixture("matmul_naive").at(0);
    CHECK(k.primary == "memory_bound_l1");
    CHECK(k.has("uncoalesced_global_access"));
    CHECK(k.has("tensor_cores_unused"));
    CHECK_FALSE(k.has("shared_memory_bank_conflicts"));
  }
  SUBCASE("matmul_tiled: its own verdict, L1/shared-bound with mild bank conflicts") {
    const auto k = classify_fixture("matmul_tiled").at(0);
    CHECK(k.primary == "memory_bound_l1");  // Memory 91 % (L1/TEX 94 %), SM 77 %
    CHECK(k.has("shared_memory_bank_conflicts"));
    CHECK(k.has("tensor_cores_unused"));
    CHECK_FALSE(k.has("uncoalesced_global_access"));
  }
  SUBCASE("fma_heavy: compute-bound") {
    const auto k = classify_fixture("fma_heavy").at(0);
    CHECK(k.primary == "compute_bound");
    CHECK(k.secondary.empty());
  }
  SUBCASE("tiny: small grid, launch-bound, occupancy limited by block size") {
    const auto k = classify_fixture("tiny").at(0);
    CHECK(k.primary == "small_grid");
    CHECK(k.has("launch_bound"));
    CHECK(k.has("occupancy_limited_by_block_size"));
  }
  SUBCASE("transpose_conflicts: bank conflicts") {
    const auto k = classify_fixture("transpose_conflicts").at(0);
    CHECK(k.primary == "memory_bound_l1");
    CHECK(k.has("shared_memory_bank_conflicts"));
    CHECK_FALSE(k.has("uncoalesced_global_access"));
  }
  SUBCASE("divergent: compute-bound with warp divergence") {
    const auto k = classify_fixture("divergent").at(0);
    CHECK(k.primary == "compute_bound");
    CHECK(k.has("warp_divergence"));
    CHECK_FALSE(k.has("register_spills"));  // its small local traffic (sinf slow path) stays under the bar
  }
  SUBCASE("spills: DRAM-bound with local-memory traffic") {
    const auto k = classify_fixture("spills").at(0);
    CHECK(k.primary == "memory_bound_dram");
    CHECK(k.has("register_spills"));
    CHECK(k.has("uncoalesced_global_access"));
  }
  SUBCASE("atomic_sum: latency-bound by atomic contention") {
    const auto k = classify_fixture("atomic_sum").at(0);
    CHECK(k.primary == "latency_bound");
    CHECK(k.has("atomic_contention"));
  }
}

TEST_CASE("the details page alone gives the same verdicts as details plus raw") {
  for (const char* name : {"vadd", "matmul_naive", "matmul_tiled", "fma_heavy", "tiny", "transpose_conflicts",
                           "divergent", "spills", "atomic_sum"}) {
    CAPTURE(name);
    const auto a = classify_fixture(name, false), b = classify_fixture(name, true);
    REQUIRE(a.size() == b.size());
    CHECK(a[0].primary == b[0].primary);
    CHECK(a[0].secondary_names() == b[0].secondary_names());
  }
}

TEST_CASE("every verdict carries evidence with figures") {
  const auto k = classify_fixture("transpose_conflicts").at(0);
  CHECK_FALSE(k.primary_evidence.empty());
  CHECK(k.primary_evidence[0].find("83.7") != std::string::npos);
  for (const auto& c : k.secondary) {
    CHECK_FALSE(c.evidence.empty());
  }
  REQUIRE(k.secondary.size() >= 1);
  CHECK(k.secondary[0].estimated_speedup == doctest::Approx(89.44));
  CHECK_FALSE(k.findings.empty());
  CHECK(k.findings[0].estimated_speedup >= k.findings.back().estimated_speedup);
}

TEST_CASE("SOL thresholds: each band reached from synthetic figures") {
  auto make = [](double sm, double mem, double dram, double l2, double l1, double waves) {
    kernel_instance k;
    k.name = "k(int)";
    k.function = "k";
    k.launch.grid = {1000, 1, 1};
    k.launch.sm_count = 132;
    k.launch.waves_per_sm = waves;
    const char* sec = "GPU Speed Of Light Throughput";
    for (auto [n, v] : {std::pair{"Compute (SM) Throughput", sm}, {"Memory Throughput", mem}, {"DRAM Throughput", dram},
                        {"L2 Cache Throughput", l2}, {"L1/TEX Cache Throughput", l1}})
      k.metrics.push_back({sec, "", n, "%", std::to_string(v), v});
    k.reindex();
    return classify(k);
  };
  CHECK(make(85, 30, 20, 20, 30, 10).primary == "compute_bound");
  CHECK(make(30, 85, 20, 85, 30, 10).primary == "memory_bound_l2");
  CHECK(make(30, 64, 62.6, 64, 30, 10).primary == "memory_bound_dram");  // DRAM within the tie of L2
  CHECK(make(30, 70, 62, 70, 30, 10).primary == "memory_bound_l2");      // L2 clearly busier
  CHECK(make(75, 62, 60, 10, 10, 10).primary == "compute_heavy");
  CHECK(make(62, 75, 10, 10, 75, 10).primary == "memory_heavy");
  CHECK(make(65, 70, 70, 10, 10, 10).primary == "balanced");
  CHECK(make(20, 30, 30, 10, 10, 10).primary == "latency_bound");
  CHECK(make(20, 30, 30, 10, 10, 0.5).primary == "small_grid");
  CHECK(make(79.9, 50, 50, 1, 1, 10).primary == "compute_bound");  // one-sided
  kernel_instance empty;
  const auto u = classify(empty);
  CHECK(u.primary == "unknown");
  CHECK_FALSE(u.unknown.empty());
}

TEST_CASE("state matcher and summaries") {
  const auto outcome = analyze_recorded(dir() + "spills.details.csv", dir() + "spills.raw.csv");
  REQUIRE(outcome.error.empty());
  REQUIRE(outcome.kernels.size() == 1);
  const auto& v = outcome.kernels[0];
  CHECK(v.state.state == "memory_bound_dram+register_spills+uncoalesced_global_access");
  const std::string prompt = summarize_for_prompt(v);
  CHECK(prompt.size() < 6000);  // under 1,500 tokens at ~4 characters per token
  CHECK(prompt.find("register_spills") != std::string::npos);
  const auto j = to_json(v);
  CHECK(j["name"] == "spills(const int *, float *, int)");
  CHECK(j["primary"] == "memory_bound_dram");
  CHECK(j["secondary"].size() == 2);
  CHECK(render_human(v).find("memory_bound_dram") != std::string::npos);
  // Every recorded kernel's summary stays compact.
  for (const char* name : {"vadd", "matmul_naive", "matmul_tiled", "tiny", "divergent", "atomic_sum"}) {
    const auto o = analyze_recorded(dir() + name + ".details.csv");
    for (const auto& k : o.kernels) CHECK(summarize_for_prompt(k).size() < 6000);
  }
}

TEST_CASE("analyze_recorded reports unreadable and wrong files as errors") {
  CHECK(analyze_recorded("/nonexistent.csv").error.find("cannot read") != std::string::npos);
  CHECK(analyze_recorded(dir() + "kernels.cu").error.find("not an Nsight Compute details page") != std::string::npos);
  const auto bad_raw = analyze_recorded(dir() + "tiny.details.csv", dir() + "tiny.log");
  CHECK_FALSE(bad_raw.error.empty());
}

TEST_CASE("data reuse: global-load sectors per DRAM sector read, from the memory tables") {
  // Element-wise and streaming kernels read each byte once; a matrix product re-reads its rows.
  auto reuse = [](const std::string& name) { return classify_fixture(name).at(0).global_load_reuse; };
  for (const char* once : {"vadd", "transpose_conflicts", "atomic_sum", "tiny"}) {
    CAPTURE(once);
    REQUIRE(reuse(once));
    CHECK(*reuse(once) < classifier_thresholds{}.data_reuse_ratio);
  }
  REQUIRE(reuse("matmul_tiled"));
  CHECK(*reuse("matmul_tiled") == doctest::Approx(62.8).epsilon(0.01));
  REQUIRE(reuse("matmul_naive"));
  CHECK(*reuse("matmul_naive") > 4000);
  // The details page carries the same memory-table figures as the raw page.
  const auto details_only = classify_fixture("vadd", false).at(0).global_load_reuse;
  REQUIRE(details_only);
  CHECK(*details_only == doctest::Approx(*reuse("vadd")));
  // The summaries say it in words.
  kernel_view v;
  v.signature = classify_fixture("matmul_tiled").at(0);
  CHECK(summarize_for_prompt(v).find("Reuse: 62.8 global-load sectors per DRAM sector read (data is re-read") !=
        std::string::npos);
}

TEST_CASE("achieved rates against the GPU's peaks, from the roofline metrics of the raw page") {
  // vadd streams two reads and a write: its DRAM rate is the DRAM Throughput ncu reports (77 %),
  // at the H100's 3.35 TB/s (1,280 bytes per cycle at 2.62 GHz); FP32 53.2 TFLOP/s at the base
  // clock ncu locks (16,896 FMA lanes, two FLOP each, 1.57 GHz).
  const auto vadd = classify_fixture("vadd").at(0);
  REQUIRE(vadd.sol.dram_bytes_per_s);
  REQUIRE(vadd.sol.dram_peak_bytes_per_s);
  CHECK(*vadd.sol.dram_peak_bytes_per_s == doctest::Approx(3.35e12).epsilon(0.01));
  CHECK(100 * *vadd.sol.dram_bytes_per_s / *vadd.sol.dram_peak_bytes_per_s == doctest::Approx(*vadd.sol.dram_pct).epsilon(0.02));
  REQUIRE(vadd.sol.fp32_peak_flops_per_s);
  CHECK(*vadd.sol.fp32_peak_flops_per_s == doctest::Approx(16896.0 * 2 * 1.573244574e9).epsilon(0.001));
  // fma_heavy spends its time in FMAs: most of the FP32 peak, almost no DRAM.
  const auto fma = classify_fixture("fma_heavy").at(0);
  REQUIRE(fma.sol.fp32_flops_per_s);
  const double fp32_share = *fma.sol.fp32_flops_per_s / *fma.sol.fp32_peak_flops_per_s;
  CHECK(fp32_share > 0.5);
  CHECK(fp32_share < 1.0);
  CHECK(*fma.sol.dram_bytes_per_s / *fma.sol.dram_peak_bytes_per_s < 0.05);
  const auto text = achieved_rates_text(fma.sol);
  CHECK(text.find("DRAM 41.3 GB/s of 3.35 TB/s (1.2%)") != std::string::npos);
  CHECK(text.find("FP32 31.") != std::string::npos);
  CHECK(text.find("TFLOP/s of 54.2 TFLOP/s") != std::string::npos);
  // The launch as profiled.
  CHECK(launch_text(fma.launch).find("grid (65536, 1, 1) x block (") != std::string::npos);
  CHECK(launch_text(fma.launch).find("registers/thread") != std::string::npos);
  // The details page alone has no roofline metrics: no rates claimed.
  const auto details_only = classify_fixture("fma_heavy", false).at(0);
  CHECK_FALSE(details_only.sol.fp32_flops_per_s);
  CHECK(achieved_rates_text(details_only.sol).empty());
}

TEST_CASE("achieved rates from the details page's display units (the metrics asked for with --metrics)") {
  // A live profile's details page prints the requested metrics in display units; the rates are
  // the same as from the raw page's base units.
  profile_report r;
  kernel_instance k;
  k.name = k.function = "row_sum";
  const auto add = [&](const char* name, const char* unit, double value) {
    k.metrics.push_back({"Command line profiler metrics", "", name, unit, std::to_string(value), value});
  };
  add("dram__bytes.sum.per_second", "Gbyte/second", 908.47);
  add("dram__bytes.sum.peak_sustained", "Kbyte/cycle", 1.28);
  add("dram__cycles_elapsed.avg.per_second", "cycle/nsecond", 2.61);
  add("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", "inst/cycle", 100);
  add("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", "inst/cycle", 0);
  add("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", "inst/cycle", 50);
  add("smsp__cycles_elapsed.avg.per_second", "cycle/nsecond", 1.5);
  add("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "Kinst/cycle", 16.896);
  add("sm__cycles_elapsed.avg.per_second", "cycle/nsecond", 1.5);
  k.reindex();
  r.kernels.push_back(k);
  const auto s = classify_report(r).at(0);
  REQUIRE(s.sol.dram_bytes_per_s);
  CHECK(*s.sol.dram_bytes_per_s == doctest::Approx(908.47e9));
  CHECK(*s.sol.dram_peak_bytes_per_s == doctest::Approx(1280 * 2.61e9));
  CHECK(*s.sol.fp32_flops_per_s == doctest::Approx((100 + 0 + 2 * 50) * 1.5e9));
  CHECK(*s.sol.fp32_peak_flops_per_s == doctest::Approx(16896 * 2 * 1.5e9));
  CHECK(achieved_rates_text(s.sol).find("DRAM 908 GB/s of 3.34 TB/s (27.2%)") != std::string::npos);
}
