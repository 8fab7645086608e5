// Nsight Compute source page CSV → per-line and per-instruction metrics.
#include "engine/profile/ncu_source_parser.h"

#include "engine/profile/csv_reader.h"
#include "engine/profile/metric_value.h"
#include "engine/profile/ncu_csv_parser.h"

#include <cstdlib>

namespace kblaster::engine {

namespace {

// Column positions of the metrics we read, found by name in a block's header row.
struct source_columns {
  std::size_t line_no = no_column, line_text = no_column, address = no_column, sass_text = no_column;
  std::size_t samples = no_column, executed = no_column, excessive = no_column, sectors = no_column;
  std::size_t shared_excessive = no_column, shared_wavefronts = no_column, divergent = no_column;
  std::vector<std::pair<std::size_t, std::string>> stalls;

  static source_columns of(const std::vector<std::string>& h) {
    source_columns c;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const std::string& n = h[i];
      if (n == "Line No") c.line_no = i;
      else if (n == "Address") c.address = i;
      else if (n == "Source") {
        // cuda,sass has two "Source" columns: the CUDA text, then (after Address) the SASS text.
        if (c.line_no != no_column && c.line_text == no_column && c.address == no_column) c.line_text = i;
        else c.sass_text = i;
      } else if (n == "Warp Stall Sampling (All Samples)") c.samples = i;
      else if (n == "Instructions Executed") c.executed = i;
      else if (n == "L2 Theoretical Sectors Global Excessive") c.excessive = i;
      else if (n == "L2 Theoretical Sectors Global") c.sectors = i;
      else if (n == "L1 Wavefronts Shared Excessive") c.shared_excessive = i;
      else if (n == "L1 Wavefronts Shared") c.shared_wavefronts = i;
      else if (n == "Divergent Branches") c.divergent = i;
      else if (n.rfind("stall_", 0) == 0 && n.find("(Not Issued)") == std::string::npos)
        c.stalls.emplace_back(i, n);
    }
    return c;
  }
  bool has_metrics() const { return samples != no_column || executed != no_column; }
};

double number_at(const std::vector<std::string>& row, std::size_t i) {
  if (i == no_column || i >= row.size()) return 0;
  return parse_metric_number(row[i]).value_or(0);
}

source_metrics metrics_of(const std::vector<std::string>& row, const source_columns& c) {
  source_metrics m;
  m.stall_samples = number_at(row, c.samples);
  m.instructions_executed = number_at(row, c.executed);
  m.global_excessive_sectors = number_at(row, c.excessive);
  m.global_sectors = number_at(row, c.sectors);
  m.shared_excessive_wavefronts = number_at(row, c.shared_excessive);
  m.shared_wavefronts = number_at(row, c.shared_wavefronts);
  m.divergent_branches = number_at(row, c.divergent);
  for (const auto& [i, name] : c.stalls)
    if (double v = number_at(row, i); v > 0) m.stalls[name] = v;
  return m;
}

}  // namespace

std::vector<source_page> parse_ncu_source(std::string_view csv_text) {
  csv_reader reader(csv_text);
  std::vector<std::string> row;
  std::vector<source_page> pages;
  source_columns cols;
  bool in_table = false;
  int current_line = 0;
  auto page = [&]() -> source_page& {
    if (pages.empty()) pages.emplace_back();
    return pages.back();
  };
  while (reader.next(row)) {
    if (row.empty() || (row.size() == 1 && row[0].empty())) continue;
    const std::string& first = row[0];
    // Block headers: a key and its value on one row.
    if (first == "Kernel Name" || first == "Function Name") {
      // "File Path" precedes "Function Name" in the cuda,sass view: reuse that page.
      if (pages.empty() || !pages.back().kernel.empty() || in_table) pages.emplace_back();
      page().kernel = row.size() > 1 ? row[1] : "";
      in_table = false;
      continue;
    }
    if (first == "File Path" || first == "File Name") {
      if (pages.empty() || in_table || !pages.back().file.empty()) pages.emplace_back();
      page().file = row.size() > 1 ? row[1] : "";
      in_table = false;
      continue;
    }
    if (first == "Address" || first == "Line No") {
      cols = source_columns::of(row);
      page().has_metrics = cols.has_metrics();
      in_table = true;
      current_line = 0;
      continue;
    }
    if (!in_table) continue;
    const bool line_row = cols.line_no != no_column && !first.empty();
    if (line_row) {
      source_line l;
      l.line = std::atoi(first.c_str());
      if (cols.line_text != no_column && cols.line_text < row.size()) l.text = row[cols.line_text];
      l.metrics = metrics_of(row, cols);
      current_line = l.line;
      page().lines.push_back(std::move(l));
      continue;
    }
    if (cols.address == no_column || cols.address >= row.size()) continue;
    const std::string& address = row[cols.address];
    if (address.empty() || address == "...") continue;  // elided instructions of other lines
    sass_instruction ins;
    ins.address = address;
    if (cols.sass_text != no_column && cols.sass_text < row.size()) {
      std::string_view t = row[cols.sass_text];
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      ins.text = std::string(t);
    }
    ins.metrics = metrics_of(row, cols);
    ins.line = current_line;
    page().instructions.push_back(std::move(ins));
  }
  if (pages.empty())
    throw ncu_parse_error("not an Nsight Compute source page: no \"Kernel Name\", \"File Path\" "
                          "or \"Address\" row (export it with: ncu -i REPORT --csv --page source "
                          "--print-source cuda,sass)");
  return pages;
}

}  // namespace kblaster::engine
