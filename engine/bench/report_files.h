// Writing a report: read one or more run directories, compute the metrics, and write
// report.md, report.html (self-contained) and metrics.json (what tools/bench_plot.py draws).
#pragma once

#include "engine/bench/report_markdown.h"

#include <filesystem>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// Loads runs from their directories; `names` (optional, same order) label them, else each
/// directory's name. Throws store_error.
std::vector<report_run> load_runs(const std::vector<std::filesystem::path>& dirs, const std::vector<std::string>& names);

/// What write_report wrote.
struct report_paths {
  std::filesystem::path markdown, html, metrics;
  std::string html_note;  ///< why no HTML was written (Chart.js missing), else empty
};

/// Writes OUT/report.md, OUT/metrics.json and, when Chart.js is found, OUT/report.html.
report_paths write_report(const std::vector<report_run>& runs, const std::filesystem::path& out);

}  // namespace kblaster::engine::bench
