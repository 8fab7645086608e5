// HTML rendering of the bench report (Chart.js inlined, so the page needs no network).
#include "engine/bench/report_html.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kblaster::engine::bench {

namespace {

// The charts, drawn from the embedded data. Kept as one literal: it is the page's only script.
constexpr const char* charts_js = R"JS(
const data = JSON.parse(document.getElementById('bench-data').textContent);
const palette = ['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#7f7f7f','#bcbd22','#17becf'];
const color = i => palette[i % palette.length];
const fastp = [];
data.runs.forEach(run => {
  [...run.metrics.levels, run.metrics.overall].forEach(g => fastp.push({label: run.name + ' / ' + g.name,
    data: g.fast_p.p.map((p, i) => ({x: p, y: 100 * g.fast_p.best[i]})), borderColor: color(fastp.length),
    backgroundColor: color(fastp.length), pointRadius: 0, borderWidth: g.level === 0 ? 3 : 1.5}));
});
new Chart(document.getElementById('fastp'), {type: 'line', data: {datasets: fastp}, options: {
  plugins: {title: {display: true, text: 'fast_p over the better of eager and torch.compile'}},
  scales: {x: {type: 'linear', min: 0, max: 4, title: {display: true, text: 'p (speedup threshold)'}},
           y: {min: 0, max: 100, title: {display: true, text: '% of problems correct and > p times faster'}}}}});
new Chart(document.getElementById('distribution'), {type: 'bar', data: {labels: data.histogram_bins,
  datasets: data.runs.map((run, i) => ({label: run.name, data: run.histogram, backgroundColor: color(i)}))},
  options: {plugins: {title: {display: true, text: 'Speedup over the better baseline (valid problems)'}},
            scales: {y: {title: {display: true, text: 'problems'}}}}});
const techniques = [...new Set(data.runs.flatMap(r => Object.keys(r.metrics.techniques)))].sort();
new Chart(document.getElementById('techniques'), {type: 'bar', data: {labels: techniques,
  datasets: data.runs.flatMap((run, i) => [
    {label: run.name + ' succeeded', stack: run.name, backgroundColor: '#2ca02c',
     data: techniques.map(t => (run.metrics.techniques[t] || {}).success || 0)},
    {label: run.name + ' failed', stack: run.name, backgroundColor: '#d62728',
     data: techniques.map(t => (run.metrics.techniques[t] || {}).failure || 0)}])},
  options: {indexAxis: 'y', plugins: {title: {display: true, text: 'Technique attempts by outcome'}},
            scales: {x: {stacked: true}, y: {stacked: true}}}});
const states = [...new Set(data.runs.flatMap(r => Object.keys(r.metrics.states)))].sort();
new Chart(document.getElementById('states'), {type: 'bar', data: {labels: states,
  datasets: data.runs.map((run, i) => ({label: run.name, backgroundColor: color(i),
    data: states.map(s => run.metrics.states[s] || 0)}))},
  options: {indexAxis: 'y', plugins: {title: {display: true, text: 'States visited (kernel versions profiled)'}}}});
new Chart(document.getElementById('tokens'), {type: 'scatter', data: {datasets: data.runs.map((run, i) => ({
  label: run.name, backgroundColor: color(i), data: run.points.map(p => ({x: p.tokens, y: p.speedup, problem: p.problem}))}))},
  options: {plugins: {title: {display: true, text: 'Speedup against tokens spent'},
            tooltip: {callbacks: {label: c => c.raw.problem + ': ' + c.raw.y.toFixed(2) + 'x, ' + c.raw.x + ' tokens'}}},
            scales: {x: {title: {display: true, text: 'tokens'}},
                     y: {type: 'logarithmic', title: {display: true, text: 'speedup over the better baseline'}}}}});
)JS";

// Upper edges of the histogram's bins; the last bin is open.
const double bin_edges[] = {0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2, 3, 5};

}  // namespace

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string markdown_table_html(const std::string& md) {
  std::istringstream in(md);
  std::ostringstream o;
  o << "<table>\n";
  std::string line;
  int row = 0;
  while (std::getline(in, line)) {
    if (line.size() < 2 || line[0] != '|') continue;
    if (row++ == 1) continue;  // the alignment row
    const char* cell = row == 1 ? "th" : "td";
    o << "<tr>";
    std::size_t start = 1;
    for (std::size_t bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1) {
      auto text = line.substr(start, bar - start);
      const auto b = text.find_first_not_of(' '), e = text.find_last_not_of(' ');
      text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
      o << "<" << cell << ">" << escape_html(text) << "</" << cell << ">";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string find_chartjs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("KBLASTER_CHARTJS"); env && *env && fs::exists(env, ec)) return env;
  const fs::path debian = "/usr/share/javascript/chart.js/chart.min.js";
  return fs::exists(debian, ec) ? debian.string() : std::string();
}

nlohmann::json report_data(const std::vector<report_run>& runs) {
  nlohmann::json bins = nlohmann::json::array();
  double lo = 0;
  for (double e : bin_edges) {
    std::ostringstream label;
    label << lo << "-" << e << "x";
    bins.push_back(label.str());
    lo = e;
  }
  bins.push_back("> " + std::to_string(static_cast<int>(lo)) + "x");
  nlohmann::json out{{"histogram_bins", bins}, {"runs", nlohmann::json::array()}};
  for (const auto& r : runs) {
    std::vector<int> histogram(std::size(bin_edges) + 1, 0);
    nlohmann::json points = nlohmann::json::array(), degenerate = nlohmann::json::array();
    for (const auto& p : r.results) {
      // Left out of every chart, as of the metrics: listed instead.
      if (!p.degenerate.empty()) {
        degenerate.push_back({{"problem", result_key(p.level, p.problem)}, {"reason", p.degenerate}});
        continue;
      }
      const auto s = speedups_of(p).best_baseline;
      if (!s) continue;
      std::size_t bin = 0;
      while (bin < std::size(bin_edges) && *s >= bin_edges[bin]) ++bin;
      ++histogram[bin];
      points.push_back({{"problem", result_key(p.level, p.problem)}, {"tokens", p.tokens}, {"speedup", *s}});
    }
    out["runs"].push_back({{"name", r.name}, {"manifest", r.manifest}, {"metrics", to_json(r.metrics)},
                           {"histogram", histogram}, {"points", points}, {"degenerate", degenerate}});
  }
  return out;
}

std::string report_html(const std::vector<report_run>& runs, const std::string& chartjs) {
  if (chartjs.empty()) throw std::invalid_argument("the HTML report needs Chart.js (apt install libjs-chart.js)");
  auto data = report_data(runs).dump();
  // JSON inside <script>: "</" would end the element early.
  for (std::size_t at = 0; (at = data.find("</", at)) != std::string::npos; at += 3) data.replace(at, 2, "<\\/");
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>KernelBench evaluation</title>\n"
    << "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
       "td:first-child,td:nth-child(2),th{text-align:left}.chart{margin:2em 0}</style>\n"
    << "<script>\n" << chartjs << "\n</script>\n</head><body>\n<h1>KernelBench evaluation</h1>\n";
  for (const auto& r : runs) {
    o << "<p>Run <b>" << escape_html(r.name) << "</b>: " << r.results.size() << " problems; GPU "
      << escape_html(r.manifest.value("gpu", std::string("?"))) << "; hyperparameters <code>"
      << escape_html(r.manifest.value("hyperparameters", nlohmann::json::object()).dump()) << "</code></p>\n";
    if (r.metrics.overall.degenerate == 0) continue;
    o << "<p>Degenerate problems of <b>" << escape_html(r.name) << "</b>, left out of the aggregates and the charts "
      << "(the reference's output constant over the declared inputs, or not depending on one of them):</p>\n<ul>\n";
    for (const auto& p : r.results)
      if (!p.degenerate.empty())
        o << "<li>" << escape_html(result_key(p.level, p.problem)) << ": " << escape_html(p.degenerate) << "</li>\n";
    o << "</ul>\n";
  }
  o << "<h2>Summary (the shape of the paper's Table 3)</h2>\n" << markdown_table_html(table3_markdown(runs));
  for (const char* id : {"fastp", "distribution", "techniques", "states", "tokens"})
    o << "<div class=\"chart\"><canvas id=\"" << id << "\"></canvas></div>\n";
  o << "<script type=\"application/json\" id=\"bench-data\">" << data << "</script>\n<script>" << charts_js
    << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace kblaster::engine::bench
