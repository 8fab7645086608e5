// report_files: the report's three files from run directories.
#include "engine/bench/report_files.h"
#include "support/files.h"

#include "engine/bench/report_html.h"
#include "engine/bench/result_store.h"

#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

std::vector<report_run> load_runs(const std::vector<fs::path>& dirs, const std::vector<std::string>& names) {
  std::vector<report_run> runs;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    if (!fs::is_directory(dirs[i] / "results")) throw store_error(dirs[i].string() + " is not a bench run directory (no results/)");
    result_store store(dirs[i]);
    report_run r;
    r.name = i < names.size() ? names[i] : fs::absolute(dirs[i]).lexically_normal().filename().string();
    if (r.name.empty()) r.name = fs::absolute(dirs[i]).parent_path().filename().string();
    r.manifest = store.manifest().value_or(nlohmann::json::object());
    r.results = store.results();
    r.metrics = compute_metrics(r.name, r.results);
    runs.push_back(std::move(r));
  }
  return runs;
}

report_paths write_report(const std::vector<report_run>& runs, const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  report_paths p{out / "report.md", out / "report.html", out / "metrics.json", {}};
  {
    std::ofstream md(p.markdown);
    md << report_markdown(runs);
    if (!md) throw store_error("cannot write " + p.markdown.string());
  }
  write_json_atomic(p.metrics, report_data(runs));
  const auto chartjs = find_chartjs();
  if (chartjs.empty()) {
    p.html_note = "no report.html: Chart.js not found (apt install libjs-chart.js, or set KBLASTER_CHARTJS)";
    p.html.clear();
    return p;
  }
  std::ofstream html(p.html);
  html << report_html(runs, support::read_file(chartjs));
  if (!html) throw store_error("cannot write " + p.html.string());
  return p;
}

}  // namespace kblaster::engine::bench
