// The bench report in Markdown: the Table-3-shaped summary (one row per run and level, the
// columns the KernelBlaster paper reports: valid rate and geometric-mean speedup over eager,
// torch.compile and the better of the two, plus fast_1), then the detailed statistics, fast_p at
// selected p, statuses, technique usage, states visited and the per-problem results.
#pragma once

#include "engine/bench/metrics.h"
#include "engine/bench/problem_result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// One run as the report sees it.
struct report_run {
  std::string name;
  nlohmann::json manifest = nlohmann::json::object();
  std::vector<problem_result> results;
  run_metrics metrics;
};

/// Formats a speedup as "1.43x" (two decimals), "-" when absent.
std::string format_speedup(double v, int n = 1);

/// Formats a share as a percentage with one decimal: 0.935 -> "93.5%".
std::string format_percent(double share);

/// The Table-3-shaped Markdown table for several runs (rows: run x level, then run x all).
std::string table3_markdown(const std::vector<report_run>& runs);

/// The whole Markdown report.
std::string report_markdown(const std::vector<report_run>& runs);

}  // namespace kblaster::engine::bench
