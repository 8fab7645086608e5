// Tests of the Nsight Compute CSV parsers on the recorded H100 pages and on edge cases.
#include "engine/profile/csv_reader.h"
#include "support/files.h"
#include "engine/profile/metric_value.h"
#include "engine/profile/ncu_csv_parser.h"

#include <doctest/doctest.h>

#include <string>

using namespace kblaster::engine;

namespace {
std::string fixture(const std::string& name) { return kblaster::support::read_file(std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/" + name); }
}  // namespace

TEST_CASE("csv_reader handles quoted commas, doubled quotes, newlines and CRLF") {
  csv_reader r("\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",plain\r\nx,,\"\"\n");
  std::vector<std::string> f;
  REQUIRE(r.next(f));
  CHECK(f == std::vector<std::string>{"a,b", "say \"hi\"", "two\nlines", "plain"});
  REQUIRE(r.next(f));
  CHECK(r.line() == 3);
  CHECK(f == std::vector<std::string>{"x", "", ""});
  CHECK_FALSE(r.next(f));
}

TEST_CASE("metric numbers: thousands separators, n/a, breakdowns, exponents") {
  CHECK(parse_metric_number("1,180,696,576 (537,657,344; 338,034,688)") == doctest::Approx(1180696576.0));
  CHECK(parse_metric_number("111,953.52") == doctest::Approx(111953.52));
  CHECK(parse_metric_number("8.733e-05") == doctest::Approx(8.733e-05));
  CHECK_FALSE(parse_metric_number("n/a"));
  CHECK_FALSE(parse_metric_number("no data"));
  CHECK_FALSE(parse_metric_number("-"));
  CHECK_FALSE(parse_metric_number("PolicySpread"));
  CHECK(to_base_unit(73.79, "us").value == doctest::Approx(73.79e-6));
  CHECK(to_base_unit(32.77, "Kbyte").value == doctest::Approx(32770));
  CHECK(to_base_unit(2.59, "Tbyte/s").unit == "byte/second");
  CHECK(to_base_unit(1.59, "Ghz").value == doctest::Approx(1.59e9));
  // As the details page prints the metrics asked for with --metrics: clocks per nanosecond,
  // prefixed counts per cycle and per second.
  CHECK(to_base_unit(2.61, "cycle/nsecond").value == doctest::Approx(2.61e9));
  CHECK(to_base_unit(2.61, "cycle/nsecond").unit == "cycle/second");
  CHECK(to_base_unit(1.28, "Kbyte/cycle").value == doctest::Approx(1280));
  CHECK(to_base_unit(1.28, "Kbyte/cycle").unit == "byte/cycle");
  CHECK(to_base_unit(908.5, "Gbyte/second").value == doctest::Approx(9.085e11));
  CHECK(to_base_unit(9.93, "Kinst/cycle").value == doctest::Approx(9930));
  CHECK(to_base_unit(144.52, "inst/cycle").value == doctest::Approx(144.52));
}

TEST_CASE("vadd details page: three instances in launch order with launch configuration") {
  const auto report = parse_ncu_details(fixture("vadd.details.csv"));
  REQUIRE(report.kernels.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& k = report.kernels[static_cast<std::size_t>(i)];
    CHECK(k.id == i);
    CHECK(k.function == "vadd");
    CHECK(k.launch.block.x == 256);
    CHECK(k.launch.grid.total() == 65536);
    CHECK(k.compute_capability == "9.0");
    CHECK(k.launch.registers_per_thread == doctest::Approx(16));
    CHECK(k.launch.sm_count == doctest::Approx(132));
  }
  const auto& k0 = report.kernels[0];
  CHECK(k0.value("GPU Speed Of Light Throughput", "DRAM Throughput") == doctest::Approx(77.36));
  CHECK(k0.find("GPU Speed Of Light Throughput", "Duration")->unit == "us");
  // The same name in the Memory Workload Analysis section has another unit.
  CHECK(k0.find("Memory Workload Analysis", "Memory Throughput")->unit == "Tbyte/s");
  // Body Item Label is kept.
  bool labelled = false;
  for (const auto& m : k0.metrics) labelled |= (m.label == "GPU Throughput" && m.name == "Memory [%]");
  CHECK(labelled);
  // Rules with type and speedup.
  const auto cpi = k0.rules_named("CPIStall");
  REQUIRE(cpi.size() == 2);
  CHECK(cpi[0]->type == "OPT");
  CHECK(cpi[0]->speedup_type == "global");
  CHECK(cpi[0]->estimated_speedup == doctest::Approx(22.64));
  CHECK(cpi[1]->type == "INF");
  CHECK_FALSE(cpi[1]->estimated_speedup);
  // The embedded NVLink/NUMA tables were skipped, not taken for kernels.
  CHECK_FALSE(report.warnings.empty());
}

TEST_CASE("every recorded details page parses to one instance named after its file") {
  for (const char* name : {"matmul_naive", "matmul_tiled", "fma_heavy", "tiny", "transpose_conflicts", "divergent",
                           "spills", "atomic_sum"}) {
    CAPTURE(name);
    const auto report = parse_ncu_details(fixture(std::string(name) + ".details.csv"));
    REQUIRE(report.kernels.size() == 1);
    CHECK(report.kernels[0].function.rfind(name, 0) == 0);
    CHECK(report.kernels[0].value("GPU Speed Of Light Throughput", "Compute (SM) Throughput").has_value());
    CHECK_FALSE(report.kernels[0].rules.empty());
  }
  const auto tiled = parse_ncu_details(fixture("matmul_tiled.details.csv"));
  CHECK(tiled.kernels[0].function == "matmul_tiled<32>");
  CHECK(tiled.kernels[0].launch.block.y == 32);
}

TEST_CASE("details page without Body Item Label, after the program's output") {
  const auto report = parse_ncu_details(fixture("app_sections.details.csv"));
  REQUIRE(report.kernels.size() == 11);
  const char* order[] = {"vadd", "vadd", "vadd", "matmul_naive", "matmul_tiled<32>", "fma_heavy", "tiny",
                         "transpose_conflicts", "divergent", "spills", "atomic_sum"};
  for (std::size_t i = 0; i < 11; ++i) {
    CHECK(report.kernels[i].id == static_cast<long long>(i));
    CHECK(report.kernels[i].function == order[i]);
  }
  // This export printed base units: hz rather than Ghz.
  CHECK(report.kernels[0].find("GPU Speed Of Light Throughput", "SM Frequency")->unit == "hz");
  CHECK(report.kernels[0].launch.shared_config_bytes == doctest::Approx(32768));
}

TEST_CASE("speed-of-light page in base units parses too") {
  const auto report = parse_ncu_details(fixture("app_sol_base.csv"));
  CHECK(report.kernels.size() == 11);
  CHECK(report.kernels[6].function == "tiny");
}

TEST_CASE("raw page merges into the details instances by ID") {
  auto report = parse_ncu_details(fixture("vadd.details.csv"));
  merge_ncu_raw(report, fixture("vadd.raw.csv"));
  REQUIRE(report.kernels.size() == 3);
  const auto* m = report.kernels[2].find("gpu__time_duration.sum");
  REQUIRE(m);
  CHECK(m->unit == "ns");
  CHECK(m->value.has_value());
  // A raw page alone makes instances of its own.
  profile_report raw_only;
  merge_ncu_raw(raw_only, fixture("tiny.raw.csv"));
  REQUIRE(raw_only.kernels.size() == 1);
  CHECK(raw_only.kernels[0].function == "tiny");
  CHECK(raw_only.kernels[0].launch.block.x == 32);
}

TEST_CASE("columns are found by name: reordered, missing optional columns, quoted newlines in rules") {
  const std::string csv =
      "\"Kernel Name\",\"ID\",\"Section Name\",\"Metric Value\",\"Metric Name\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup\"\n"
      "\"k(int)\",\"0\",\"GPU Speed Of Light Throughput\",\"1,234.5\",\"Duration\",\"\",\"\",\"\",\"\"\n"
      "\"k(int)\",\"0\",\"SpeedOfLight\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"line one, with comma\nline two\",\"n/a\"\n";
  // No "ID" first: the header is not recognised as a details header.
  CHECK_THROWS_AS(parse_ncu_details(csv), ncu_parse_error);
  const std::string reordered =
      "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Value\",\"Metric Name\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup\"\n"
      "\"0\",\"k(int)\",\"GPU Speed Of Light Throughput\",\"1,234.5\",\"Duration\",\"\",\"\",\"\",\"\"\n"
      "\"0\",\"k(int)\",\"SpeedOfLight\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"line one, with comma\nline two\",\"n/a\"\n";
  const auto report = parse_ncu_details(reordered);
  REQUIRE(report.kernels.size() == 1);
  CHECK(report.kernels[0].value("Duration") == doctest::Approx(1234.5));
  CHECK(report.kernels[0].find("Duration")->unit.empty());  // no Metric Unit column
  REQUIRE(report.kernels[0].rules.size() == 1);
  CHECK(report.kernels[0].rules[0].text == "line one, with comma\nline two");
  CHECK_FALSE(report.kernels[0].rules[0].estimated_speedup);
}

TEST_CASE("bad input gives clear errors") {
  CHECK_THROWS_WITH_AS(parse_ncu_details(""), doctest::Contains("not an Nsight Compute details page"), ncu_parse_error);
  CHECK_THROWS_AS(parse_ncu_details(fixture("err_missing_binary.txt")), ncu_parse_error);
  CHECK_THROWS_AS(parse_ncu_details("\"ID\",\"Metric Name\"\n\"0\",\"x\"\n"), ncu_parse_error);  // no Kernel Name
  profile_report r;
  CHECK_THROWS_AS(merge_ncu_raw(r, "garbage\n"), ncu_parse_error);
  CHECK_THROWS_AS(kblaster::support::read_file("/nonexistent/file.csv"), std::runtime_error);
  // Truncated file: still parses what is there.
  const std::string text = fixture("tiny.details.csv");
  const auto half = parse_ncu_details(text.substr(0, text.size() / 2));
  CHECK(half.kernels.size() == 1);
}

// Seen while profiling fuzz_ncu_csv: an ID of 20 digits made std::stoll throw std::out_of_range
// out of both parsers (regressions/fuzz_ncu_csv/launch-id-out-of-range). Such a row is not a
// data row.
TEST_CASE("an ID beyond a long long is not a launch: the row is skipped, not thrown on") {
  const std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  const std::string row = ",\"1\",\"a\",\"h\",\"k\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"SOL\",\"x\",\"%\",\"1\"\n";
  const auto report = parse_ncu_details(header + "\"99999999999999999999\"" + row + "\"3\"" + row);
  REQUIRE(report.kernels.size() == 1);
  CHECK(report.kernels[0].id == 3);
  profile_report merged;
  merge_ncu_raw(merged, "\"ID\",\"Kernel Name\",\"m\"\n\"99999999999999999999\",\"k\",\"1\"\n\"9223372036854775807\",\"k\",\"2\"\n");
  REQUIRE(merged.kernels.size() == 1);
  CHECK(merged.kernels[0].id == 9223372036854775807LL);
}

TEST_CASE("launch dimensions: the forms ncu prints, and digits beyond any CUDA dimension are none") {
  // fuzz_ncu_csv's finding (tests/fuzz/regressions/fuzz_ncu_csv/dim3-digits-overflow): a grid
  // size of 5555555555555555555 overflowed a long long while it was read, undefined behaviour.
  const auto d = kblaster::engine::parse_dim3("(256, 2, 1)");
  REQUIRE(d);
  CHECK(d->x == 256);
  CHECK(d->y == 2);
  CHECK(d->z == 1);
  REQUIRE(kblaster::engine::parse_dim3("128"));
  CHECK(kblaster::engine::parse_dim3("128")->x == 128);
  CHECK(kblaster::engine::parse_dim3("(2147483647, 1, 1)"));
  CHECK_FALSE(kblaster::engine::parse_dim3("(2147483648, 1, 1)"));
  CHECK_FALSE(kblaster::engine::parse_dim3("(5555555555555555555, 1, 1)"));
  CHECK_FALSE(kblaster::engine::parse_dim3("(256, x, 1)"));
  CHECK_FALSE(kblaster::engine::parse_dim3(""));
}

TEST_CASE("launch dimensions: a product beyond a long long saturates") {
  const auto d = kblaster::engine::parse_dim3("(2147483647, 2147483647, 2147483647)");
  REQUIRE(d);
  CHECK(d->total() == std::numeric_limits<long long>::max());
  CHECK(kblaster::engine::parse_dim3("(1024, 64, 2)")->total() == 131072);
}
