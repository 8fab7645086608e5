// bench_profile: parse time of the 1.5 MB vadd.details.csv (target under 50 ms) and
// classification time, each the median of repeated runs. Prints figures; asserts nothing.
#include "engine/profile/ncu_csv_parser.h"
#include "support/files.h"
#include "engine/state/state_classifier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace kblaster::engine;
using clock_type = std::chrono::steady_clock;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100";
  const int runs = 21;
  std::string details, raw;
  try {
    details = kblaster::support::read_file(dir + "/vadd.details.csv");
    raw = kblaster::support::read_file(dir + "/vadd.raw.csv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_profile: %s\n", e.what());
    return 1;
  }
  std::vector<double> parse_ms, raw_ms, classify_us;
  std::size_t instances = 0, secondary = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = clock_type::now();
    auto report = parse_ncu_details(details);
    auto t1 = clock_type::now();
    merge_ncu_raw(report, raw);
    auto t2 = clock_type::now();
    const auto sigs = classify_report(report);
    auto t3 = clock_type::now();
    parse_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    raw_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    classify_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count() / static_cast<double>(sigs.size()));
    instances = sigs.size();
    secondary = sigs[0].secondary.size();
  }
  std::printf("vadd.details.csv: %.2f MB, %zu kernel instances\n", static_cast<double>(details.size()) / 1e6, instances);
  std::printf("parse details page: median %.2f ms, min %.2f ms over %d runs (target < 50 ms)\n", median(parse_ms),
              *std::min_element(parse_ms.begin(), parse_ms.end()), runs);
  std::printf("merge raw page (%.2f MB): median %.2f ms\n", static_cast<double>(raw.size()) / 1e6, median(raw_ms));
  std::printf("classify: median %.1f us per kernel instance (%zu secondary)\n", median(classify_us), secondary);
  return 0;
}
