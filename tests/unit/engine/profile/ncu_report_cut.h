// Helpers of the tests that cut recorded Nsight Compute reports down by section
// (ncu_sections_test.cpp, ncu_loop_sections_test.cpp): the recorded H100 reports and the details
// page as ncu would have printed it with only some sections asked for.
#pragma once

#include "engine/profile/ncu_runner.h"

#include <filesystem>
#include <string>
#include <vector>

namespace kblaster::test {

/// tests/fixtures/ncu-h100: one-kernel reports recorded with `--set full`.
std::filesystem::path ncu_h100_fixtures();

/// tests/fixtures/ncu-h100-rewrites: reports recorded with requested_ncu_sections().
std::filesystem::path ncu_h100_rewrite_fixtures();

/// The report names in `folder` that have both a details and a raw page (NAME.details.csv,
/// NAME.raw.csv), sorted.
std::vector<std::string> reports_in(const std::filesystem::path& folder);

/// The details page as ncu would have printed it with only `sections` asked for: metric rows
/// carry the section's display name, rule rows its identifier.
std::string only_sections(const std::string& details, const std::vector<engine::ncu_section>& sections);

/// The raw page as ncu would have printed it with only `metrics` asked for: the launch's own
/// columns (ID, names, sizes), the launch and device attributes ncu records for every profile
/// (launch__*, device__*), and the named metrics.
std::string only_metrics(const std::string& raw, const std::vector<std::string>& metrics);

/// The details page ncu prints for a run with `metrics` asked for and no section: its header and,
/// per launch of the raw page, one "Command line profiler metrics" row per metric, in the units
/// ncu scales a figure to ("us" for ns, "Msector", "Kinst"), at two decimals.
std::string metrics_details(const std::string& details, const std::string& raw, const std::vector<std::string>& metrics);

/// The first line where two texts differ, for a failure message.
std::string first_difference(const std::string& a, const std::string& b, const std::string& a_is = "the full set",
                             const std::string& b_is = "the sections asked");

}  // namespace kblaster::test
