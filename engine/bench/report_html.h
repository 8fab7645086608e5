// The bench report as one self-contained HTML page: Chart.js (Debian's libjs-chart.js) inlined,
// the data embedded as JSON, and charts of the fast_p curves (every run on one chart), the
// speedup distribution, technique usage stacked by success and failure, the states visited and
// speedup against tokens, followed by the Table-3 summary.
#pragma once

#include "engine/bench/report_markdown.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// Chart.js's UMD build: $KBLASTER_CHARTJS, else /usr/share/javascript/chart.js/chart.min.js
/// (Debian's libjs-chart.js); empty when neither exists.
std::string find_chartjs();

/// `s` with <, >, & and " escaped for HTML text and attributes.
std::string escape_html(const std::string& s);

/// A Markdown pipe table (as table3_markdown writes it; other lines are skipped) as an HTML table.
std::string markdown_table_html(const std::string& md);

/// The data the charts draw, per run (also written as metrics.json and read by tools/bench_plot.py).
nlohmann::json report_data(const std::vector<report_run>& runs);

/// The page. `chartjs` is the library's source text; throws std::invalid_argument when empty.
std::string report_html(const std::vector<report_run>& runs, const std::string& chartjs);

}  // namespace kblaster::engine::bench
