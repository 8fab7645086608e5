// learning_report: the learning curve in Markdown and in HTML (see the header).
#include "engine/bench/learning_report.h"
#include "support/text.h"

#include "engine/bench/report_html.h"
#include "engine/bench/report_markdown.h"

#include <sstream>
#include <stdexcept>

namespace kblaster::engine::bench {

namespace {

// The curves, drawn from the embedded data: every arm on one chart, then one chart per task with
// its target as a dashed line.
constexpr const char* curves_js = R"JS(
const data = JSON.parse(document.getElementById('learning-data').textContent);
const palette = {cold: '#d62728', seed: '#ff7f0e', warm: '#1f77b4', foreign: '#2ca02c'};
const color = arm => palette[arm] || '#7f7f7f';
const steps = n => Array.from({length: n}, (_, i) => i);
function draw(canvas, title, curves, target) {
  const datasets = Object.entries(curves).map(([arm, c]) => ({label: arm, data: c.map((y, x) => ({x, y})),
    borderColor: color(arm), backgroundColor: color(arm), stepped: true, pointRadius: 2,
    borderDash: arm === 'foreign' ? [5, 4] : []}));
  if (target) {
    const n = Math.max(...Object.values(curves).map(c => c.length));
    datasets.push({label: '90 % of the best', data: steps(n).map(x => ({x, y: target})), borderDash: [6, 4],
                   borderColor: '#555', pointRadius: 0});
  }
  new Chart(canvas, {type: 'line', data: {datasets}, options: {
    plugins: {title: {display: true, text: title}},
    scales: {x: {type: 'linear', title: {display: true, text: 'attempts (candidates measured after the input)'}},
             y: {title: {display: true, text: 'best speedup over the input so far'}}}}});
}
const overall = {};
data.summary.totals.forEach(a => { if (a.curve.length) overall[a.arm] = a.curve; });
draw(document.getElementById('overall'), 'Best speedup per attempt, geometric mean over the counted held-out runs', overall);
const holder = document.getElementById('tasks');
data.summary.tasks.forEach(t => {
  const div = document.createElement('div');
  div.className = 'chart small';
  const canvas = document.createElement('canvas');
  div.appendChild(canvas);
  holder.appendChild(div);
  draw(canvas, t.task + (t.informative ? '' : ' (not counted: the input reaches 90 % of its best)') +
       ', geometric mean over seeds', t.curves, t.target);
});
)JS";

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::string describe_arm(const std::string& arm, const learning_context& c) {
  if (arm == "cold") return "a blank KB: the seed's states and techniques, every prior 1.0, nothing learnt (the paper's empty KB)";
  if (arm == "seed") return "the shipped seed KB alone (its priors and notes, no learning)";
  if (arm == "warm") return "the KB learnt on the training set, on the same GPU";
  if (arm == "foreign")
    return "the learnt KB exported, its per-architecture statistics moved under the label `" + c.foreign_arch +
           "` and imported (a relabelling, stated as such: not a KB learnt on another GPU)";
  return arm;
}

// The attempts cell of one run: "3 (1.52x)", "> 8 (1.10x)" when unreached.
std::string attempts_cell(const run_count& r, int budget) {
  return (r.to_target ? std::to_string(*r.to_target) : "> " + std::to_string(budget)) + " (" + format_speedup(r.best) + ")";
}

std::string attempts_table(const learning_summary& s) {
  std::ostringstream o;
  o << "| task | best | target |";
  for (const auto& arm : s.arms)
    for (auto seed : s.seeds) o << " " << arm << " s" << seed << " |";
  o << "\n| --- | ---: | ---: |";
  for (std::size_t i = 0; i < s.arms.size() * s.seeds.size(); ++i) o << " ---: |";
  o << "\n";
  for (const auto& t : s.tasks) {
    o << "| " << t.task << (t.informative ? "" : " (not counted)") << (t.complete ? "" : " (incomplete)") << " | "
      << format_speedup(t.best) << " | " << format_speedup(t.target) << " |";
    for (const auto& arm : s.arms)
      for (auto seed : s.seeds) {
        std::string cell = "-";
        for (const auto& r : t.runs)
          if (r.arm == arm && r.seed == seed) cell = attempts_cell(r, s.budget);
        o << " " << cell << " |";
      }
    o << "\n";
  }
  return o.str();
}

std::string totals_table(const learning_summary& s) {
  std::ostringstream o;
  o << "| arm | runs counted | reached 90 % | mean attempts | median attempts |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& a : s.arm_totals)
    o << "| " << a.arm << " | " << a.runs << " | " << a.reached << " | " << support::fixed_text(a.mean_attempts, 2) << " | "
      << support::fixed_text(a.median_attempts, 1) << " |\n";
  return o.str();
}

// The curve at 0, 1, 2, 4, ... attempts and at the budget.
std::string curve_table(const learning_summary& s) {
  std::vector<int> at{0};
  for (int n = 1; n < s.budget; n *= 2) at.push_back(n);
  if (s.budget > 0) at.push_back(s.budget);
  std::ostringstream o;
  o << "| arm |";
  for (int n : at) o << " " << n << " |";
  o << "\n| --- |";
  for (std::size_t i = 0; i < at.size(); ++i) o << " ---: |";
  o << "\n";
  for (const auto& a : s.arm_totals) {
    if (a.curve.empty()) continue;
    o << "| " << a.arm << " |";
    for (int n : at) o << " " << format_speedup(a.curve[static_cast<std::size_t>(n)]) << " |";
    o << "\n";
  }
  return o.str();
}

std::string coverage_table(const learning_summary& s) {
  std::ostringstream o;
  o << "| arm | states the start KB has statistics for | states the held-out steps started in | of those, covered | "
       "attempts made from a covered state |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [arm, c] : s.coverage)
    o << "| " << arm << " | " << c.kb_states << " | " << c.visited.size() << " | " << c.covered.size() << " | "
      << c.attempts_covered << " of " << c.attempts << " |\n";
  return o.str();
}

std::string arch_table(const learning_context& c) {
  std::ostringstream o;
  o << "| arm | architecture | start: rows with attempts | start: attempts | added by the held-out runs: rows | "
       "added: attempts |\n| --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [arm, rows] : c.start_rows) {
    std::map<std::string, std::pair<arch_rows, arch_rows>> both;
    for (const auto& [arch, r] : rows) both[arch].first = r;
    if (const auto it = c.added_rows.find(arm); it != c.added_rows.end())
      for (const auto& [arch, r] : it->second) both[arch].second = r;
    for (const auto& [arch, p] : both)
      o << "| " << arm << " | " << arch << " | " << p.first.rows << " | " << p.first.attempts << " | " << p.second.rows
        << " | " << p.second.attempts << " |\n";
  }
  return o.str();
}

std::string goal_sentence(const learning_summary& s, const std::string& bold = "**") {
  if (!s.warm_over_cold) return "The warm and cold arms have no counted runs to compare.";
  const bool met = *s.warm_over_cold <= 0.5;
  std::string out = "Warm / cold mean attempts to 90 % of the best: " + bold + support::fixed_text(*s.warm_over_cold, 2) + bold +
                    " (the goal: at most 0.5): " + (met ? "met." : "not met.");
  if (s.seed_over_cold)
    out += " Seed / cold: " + bold + support::fixed_text(*s.seed_over_cold, 2) + bold + " (the seed KB should be no worse: at most 1): " +
           (*s.seed_over_cold <= 1.0 ? "met." : "not met.");
  return out;
}

}  // namespace

nlohmann::json to_json(const learning_context& c) {
  auto rows_json = [](const std::map<std::string, std::map<std::string, arch_rows>>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [arm, rows] : m)
      for (const auto& [arch, r] : rows) j[arm][arch] = {{"rows", r.rows}, {"attempts", r.attempts}};
    return j;
  };
  return {{"train", c.train},       {"test", c.test},
          {"gpu", c.gpu},           {"evaluator", c.evaluator}, {"command", c.command},
          {"foreign_arch", c.foreign_arch}, {"hyperparameters", c.hyperparameters}, {"train_breadth", c.train_breadth},
          {"start_rows", rows_json(c.start_rows)}, {"added_rows", rows_json(c.added_rows)},
          {"failed", c.failed}};
}

std::string learning_markdown(const learning_summary& s, const learning_context& c) {
  std::ostringstream o;
  o << "# Learning curve: what the KB is worth, in attempts, on held-out tasks\n\n";
  o << "- Training set (" << c.train.size() << "): " << join(c.train) << "\n";
  o << "- Held-out set (" << c.test.size() << "): " << join(c.test) << "\n";
  std::vector<std::string> seeds;
  for (auto seed : s.seeds) seeds.push_back(std::to_string(seed));
  o << "- Seeds: " << join(seeds) << "; budget: " << s.budget << " attempts per held-out run (the input not counted)\n";
  o << "- GPU here: " << (c.gpu.empty() ? "unknown" : c.gpu) << "; measured by: " << c.evaluator << "\n";
  o << "- Hyperparameters of the held-out runs: `" << c.hyperparameters.dump() << "`; the training arm's breadth: "
    << c.train_breadth << "\n";
  if (!c.command.empty()) o << "- Command: `" << c.command << "`\n";
  o << "\nArms (each held-out problem starts from its own copy of its arm's KB):\n\n";
  for (const auto& arm : s.arms) o << "- **" << arm << "**: " << describe_arm(arm, c) << "\n";
  o << "\n## Attempts to reach 90 % of the best speedup\n\n"
    << "The target of a task is 90 % of the best speedup over its input that any of its runs found. A cell is the "
       "attempts a run needed (\"> budget\": never within the budget), with the run's own best. A task whose input "
       "already reaches its target is not counted.\n\n"
    << attempts_table(s) << "\n## Per arm\n\nUnreached runs count as budget + 1 (a lower bound).\n\n" << totals_table(s)
    << "\n" << goal_sentence(s) << "\n\n## Best speedup per attempt\n\nGeometric mean over the counted runs of the best "
    << "speedup over the input after n attempts.\n\n" << curve_table(s) << "\n## State coverage of the start KBs\n\n"
    << coverage_table(s);
  for (const auto& [arm, cov] : s.coverage)
    if (!cov.visited.empty())
      o << "\n- " << arm << ": covered " << (cov.covered.empty() ? "none" : join(cov.covered)) << " of "
        << join(cov.visited);
  o << "\n\n## Statistics by architecture\n\nStatistics rows (state, technique) with attempts in each arm's start "
       "KB, and what the held-out runs added to them, summed over the problems' own copies (`all`: the pooled rows "
       "a run falls back to where its architecture has none).\n\n" << arch_table(c);
  std::vector<std::string> incomplete;
  for (const auto& t : s.tasks)
    if (!t.complete) incomplete.push_back(t.task);
  if (!c.failed.empty() || !incomplete.empty()) {
    o << "\n## Left out\n\n";
    for (const auto& f : c.failed) o << "- " << f << "\n";
    if (!incomplete.empty()) o << "- Tasks without a run in every arm and seed: " << join(incomplete) << "\n";
  }
  return o.str();
}

std::string learning_html(const learning_summary& s, const learning_context& c, const std::string& chartjs) {
  if (chartjs.empty()) throw std::invalid_argument("the HTML report needs Chart.js (apt install libjs-chart.js)");
  auto data = nlohmann::json{{"summary", to_json(s)}, {"context", to_json(c)}}.dump();
  for (std::size_t at = 0; (at = data.find("</", at)) != std::string::npos; at += 3) data.replace(at, 2, "<\\/");
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Learning curve</title>\n"
    << "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
       "td:first-child,th{text-align:left}.chart{margin:2em 0}.small{max-width:700px}</style>\n"
    << "<script>\n" << chartjs << "\n</script>\n</head><body>\n<h1>Learning curve: what the KB is worth, in attempts, "
    << "on held-out tasks</h1>\n<p>Training set: " << escape_html(join(c.train)) << ".<br>Held-out set: "
    << escape_html(join(c.test)) << ".<br>GPU here: " << escape_html(c.gpu) << "; measured by: "
    << escape_html(c.evaluator) << ".<br>Budget " << s.budget
    << " attempts per held-out run; hyperparameters <code>" << escape_html(c.hyperparameters.dump()) << "</code></p>\n<ul>\n";
  for (const auto& arm : s.arms) o << "<li><b>" << escape_html(arm) << "</b>: " << escape_html(describe_arm(arm, c)) << "</li>\n";
  o << "</ul>\n<h2>Attempts to reach 90 % of the best speedup</h2>\n" << markdown_table_html(attempts_table(s))
    << "<h2>Per arm</h2>\n" << markdown_table_html(totals_table(s)) << "<p>" << escape_html(goal_sentence(s, ""))
    << "</p>\n<div class=\"chart\"><canvas id=\"overall\"></canvas></div>\n<h2>Best speedup per attempt</h2>\n"
    << markdown_table_html(curve_table(s)) << "<h2>State coverage of the start KBs</h2>\n"
    << markdown_table_html(coverage_table(s)) << "<h2>Statistics by architecture</h2>\n"
    << markdown_table_html(arch_table(c)) << "<h2>Per task</h2>\n<div id=\"tasks\"></div>\n"
    << "<script type=\"application/json\" id=\"learning-data\">" << data << "</script>\n<script>" << curves_js
    << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace kblaster::engine::bench
