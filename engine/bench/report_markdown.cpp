// Markdown rendering of the bench report.
#include "engine/bench/report_markdown.h"
#include "support/text.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kblaster::engine::bench {

namespace {


std::string opt_ms(const std::optional<double>& v) { return v ? support::fixed_text(*v, 4) : "-"; }
std::string opt_x(const std::optional<double>& v) { return v ? support::fixed_text(*v, 2) + "x" : "-"; }

// A degenerate problem's speedups stand in parentheses: shown, and counted nowhere.
std::string shown_x(const std::optional<double>& v, bool counted) {
  return counted || !v ? opt_x(v) : "(" + opt_x(v) + ")";
}

// "6" or, with degenerate problems among them, "6 (1 degenerate)".
std::string problem_count(const group_metrics& g) {
  return std::to_string(g.problems) + (g.degenerate ? " (" + std::to_string(g.degenerate) + " degenerate)" : "");
}

// "Imports: 3 from the import cache, 2 exported (130.5 s)." when this run imported any problem; a
// problem imported by an earlier run into the same task folder, or a task folder, counts in neither.
std::string imports_line(const std::vector<problem_result>& results) {
  int cached = 0, exported = 0;
  double seconds = 0;
  for (const auto& p : results) {
    cached += p.import_cached ? 1 : 0;
    if (p.import_seconds) {
      ++exported;
      seconds += *p.import_seconds;
    }
  }
  if (cached + exported == 0) return "";
  return "Imports: " + std::to_string(cached) + " from the import cache, " + std::to_string(exported) + " exported (" +
         support::fixed_text(seconds, 1) + " s).\n\n";
}

bool any_degenerate(const std::vector<report_run>& runs) {
  for (const auto& r : runs)
    if (r.metrics.overall.degenerate > 0) return true;
  return false;
}

// The p values the Markdown shows; the JSON and the HTML carry all 41.
const double shown_p[] = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 4.0};

std::size_t p_index(double p) { return static_cast<std::size_t>(std::lround(p * 10)); }

void group_rows(std::ostringstream& o, const std::string& run, const group_metrics& g) {
  o << "| " << run << " | " << g.name << " | " << problem_count(g) << " | " << format_percent(g.valid_rate) << " | "
    << format_speedup(g.eager.geomean, g.eager.n) << " | " << format_speedup(g.compile.geomean, g.compile.n) << " | "
    << format_speedup(g.best.geomean, g.best.n) << " | " << format_percent(g.fast_p_best.at(p_index(1.0))) << " |\n";
}

std::string manifest_line(const nlohmann::json& m) {
  std::ostringstream o;
  const auto get = [&](const char* k) { return m.contains(k) && m[k].is_string() ? m[k].get<std::string>() : std::string("?"); };
  o << "GPU: " << get("gpu") << "; KB: " << get("kb") << "; model: " << get("model") << "; kblaster " << get("version")
    << " (" << get("git") << "); started " << get("created");
  if (m.contains("hyperparameters")) o << "\n\nHyperparameters: `" << m["hyperparameters"].dump() << "`";
  return o.str();
}

}  // namespace

std::string format_speedup(double v, int n) { return n > 0 ? support::fixed_text(v, 2) + "x" : "-"; }

std::string format_percent(double share) { return support::fixed_text(share * 100, 1) + "%"; }

std::string table3_markdown(const std::vector<report_run>& runs) {
  std::ostringstream o;
  o << "| run | level | problems | valid | geomean vs eager | geomean vs torch.compile | geomean vs best of both | "
       "fast_1 (best of both) |\n"
    << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& r : runs) {
    for (const auto& g : r.metrics.levels) group_rows(o, r.name, g);
    group_rows(o, r.name, r.metrics.overall);
  }
  return o.str();
}

std::string report_markdown(const std::vector<report_run>& runs) {
  std::ostringstream o;
  o << "# KernelBench evaluation\n\n"
    << "Speedups are of the best correct kernel; statistics are over valid problems, fast_p over all problems "
       "(KernelBench's definition: correct and more than p times faster). \"Best of both\" is the faster of eager "
       "PyTorch and torch.compile, the paper's baseline.\n\n";
  if (any_degenerate(runs))
    o << "A degenerate problem (its reference's output constant over the declared inputs, or not depending on one of "
         "them, as the harness found by probing the reference) proves little by verification: it is marked, its "
         "speedups are shown in parentheses, and it is left out of the valid rate, the speedups and fast_p.\n\n";
  o << "## Summary (the shape of the paper's Table 3)\n\n"
    << table3_markdown(runs) << "\n";
  for (const auto& r : runs) {
    o << "## Run " << r.name << "\n\n" << manifest_line(r.manifest) << "\n\n";
    o << "| level | baseline | n | mean | geomean | median | min | max | > 1x |\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    auto groups = r.metrics.levels;
    groups.push_back(r.metrics.overall);
    for (const auto& g : groups)
      for (const auto& [label, s] : {std::pair<const char*, const speedup_summary&>{"eager", g.eager},
                                     {"torch.compile", g.compile}, {"best of both", g.best}})
        o << "| " << g.name << " | " << label << " | " << s.n << " | " << format_speedup(s.mean, s.n) << " | "
          << format_speedup(s.geomean, s.n) << " | " << format_speedup(s.median, s.n) << " | "
          << format_speedup(s.min, s.n) << " | " << format_speedup(s.max, s.n) << " | "
          << (s.n ? format_percent(s.share_above_1) : "-") << " |\n";
    o << "\nfast_p over the best of both baselines:\n\n| level |";
    for (double p : shown_p) o << " fast_" << support::fixed_text(p, 1) << " |";
    o << "\n| --- |";
    for (std::size_t i = 0; i < std::size(shown_p); ++i) o << " ---: |";
    o << "\n";
    for (const auto& g : groups) {
      o << "| " << g.name << " |";
      for (double p : shown_p) o << " " << format_percent(g.fast_p_best.at(p_index(p))) << " |";
      o << "\n";
    }
    o << "\nCost:\n\n| level | tokens | GPU seconds | wall seconds | candidates | geomean speedup per 1M tokens/problem |\n"
      << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& g : groups)
      o << "| " << g.name << " | " << g.tokens << " | " << support::fixed_text(g.gpu_seconds, 1) << " | " << support::fixed_text(g.wall_seconds, 1)
        << " | " << g.candidates << " | " << (g.speedup_per_mtoken ? support::fixed_text(*g.speedup_per_mtoken, 3) : "-") << " |\n";
    o << "\nSeconds per candidate (medians; device: the GPU held for harness start, reference, runner, verification, "
         "timing and ncu's profiled run (reading its report back is CPU time, not counted); build: nvcc, of which "
         "waited: what the loop waited for it):\n\n"
      << "| level | candidates | profiled | device | runner | verify | time | profile | build | waited | mean device |\n"
      << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& g : groups) {
      const auto& c = g.cost;
      if (c.candidates == 0) continue;
      o << "| " << g.name << " | " << c.candidates << " | " << c.profiled << " | " << support::fixed_text(c.median_device, 2) << " | "
        << support::fixed_text(c.median.runner, 2) << " | " << support::fixed_text(c.median.verify, 2) << " | " << support::fixed_text(c.median.time, 2) << " | "
        << support::fixed_text(c.median.profile, 2) << " | " << support::fixed_text(c.median.build, 2) << " | " << support::fixed_text(c.median.build_wait, 2)
        << " | " << support::fixed_text(c.mean_device, 2) << " |\n";
    }
    // The input kernels apart: each problem's is measured (and profiled, unless its profile was
    // kept) once, before any candidate.
    bool inputs = false;
    for (const auto& g : groups) {
      const auto& c = g.input_cost;
      if (c.candidates == 0) continue;
      if (!inputs)
        o << "\nThe input kernels, measured once per problem (medians; the profile is the first selection's state):\n\n"
          << "| level | input kernels | profiled | device | verify | time | profile | mean device |\n"
          << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
      inputs = true;
      o << "| " << g.name << " | " << c.candidates << " | " << c.profiled << " | " << support::fixed_text(c.median_device, 2) << " | "
        << support::fixed_text(c.median.verify, 2) << " | " << support::fixed_text(c.median.time, 2) << " | " << support::fixed_text(c.median.profile, 2) << " | "
        << support::fixed_text(c.mean_device, 2) << " |\n";
    }
    o << "\nStatuses: ";
    bool first = true;
    for (const auto& [s, n] : r.metrics.overall.statuses) {
      o << (first ? "" : ", ") << s << " " << n;
      first = false;
    }
    o << "\n\n" << imports_line(r.results);
    if (r.metrics.overall.degenerate > 0) {
      o << "Degenerate, left out of the aggregates:\n\n";
      for (const auto& p : r.results)
        if (!p.degenerate.empty()) o << "- " << result_key(p.level, p.problem) << ": " << p.degenerate << "\n";
      o << "\n";
    }
    if (!r.metrics.techniques.empty()) {
      o << "| technique | succeeded | failed |\n| --- | ---: | ---: |\n";
      for (const auto& [t, c] : r.metrics.techniques) o << "| " << t << " | " << c.success << " | " << c.failure << " |\n";
      o << "\n";
    }
    if (!r.metrics.states.empty()) {
      o << "| state visited | versions |\n| --- | ---: |\n";
      for (const auto& [s, n] : r.metrics.states) o << "| " << s << " | " << n << " |\n";
      o << "\n";
    }
    o << "| level | problem | status | valid | eager ms | compile ms | reference ms | input ms | best ms | vs eager | "
         "vs compile | vs best | tokens | note |\n"
      << "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    for (const auto& p : r.results) {
      const auto s = speedups_of(p);
      const bool counted = p.degenerate.empty();
      std::string note = p.error.substr(0, 120);
      if (!counted) note = p.degenerate + " (left out of the aggregates)" + (note.empty() ? "" : "; " + note);
      for (auto& c : note)
        if (c == '|' || c == '\n') c = ' ';
      o << "| " << p.level << " | " << p.problem << " | " << p.status << " | " << (p.valid ? "yes" : "no") << " | "
        << opt_ms(p.eager_ms) << " | " << opt_ms(p.compile_ms) << " | " << opt_ms(p.reference_ms) << " | "
        << opt_ms(p.input_ms) << " | " << opt_ms(p.best_ms) << " | " << shown_x(s.eager, counted) << " | "
        << shown_x(s.compile, counted) << " | " << shown_x(s.best_baseline, counted) << " | " << p.tokens << " | " << note
        << " |\n";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace kblaster::engine::bench
