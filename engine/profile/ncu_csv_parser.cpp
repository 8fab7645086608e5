// Nsight Compute details and raw CSV pages → profile_report.
#include "engine/profile/ncu_csv_parser.h"

#include "engine/profile/csv_reader.h"
#include "engine/profile/metric_value.h"
#include "engine/toolchain/ptxas_parser.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

namespace kblaster::engine {

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ncu's launch ID: digits that fit a long long. A row without one is not a data row (a 20-digit
// ID made std::stoll throw std::out_of_range out of the parser; seen while profiling fuzz_ncu_csv,
// which had not reached it yet).
std::optional<long long> launch_id(std::string_view s) {
  long long id = 0;
  if (!all_digits(s) || std::from_chars(s.data(), s.data() + s.size(), id).ec != std::errc()) return std::nullopt;
  return id;
}

const std::string& field_or_empty(const std::vector<std::string>& row, std::size_t i) {
  static const std::string empty;
  return i < row.size() ? row[i] : empty;
}

// Columns of the details page; optional ones are no_column when absent.
struct details_columns {
  std::size_t id, kernel, section, name, unit, value;
  std::size_t label, process_id, process, device, cc, block, grid;
  std::size_t rule, rule_type, rule_text, speedup_type, speedup;

  static details_columns of(const std::vector<std::string>& h) {
    return {column_index(h, "ID"),          column_index(h, "Kernel Name"),
            column_index(h, "Section Name"), column_index(h, "Metric Name"),
            column_index(h, "Metric Unit"),  column_index(h, "Metric Value"),
            column_index(h, "Body Item Label"), column_index(h, "Process ID"),
            column_index(h, "Process Name"), column_index(h, "Device"),
            column_index(h, "CC"),           column_index(h, "Block Size"),
            column_index(h, "Grid Size"),    column_index(h, "Rule Name"),
            column_index(h, "Rule Type"),    column_index(h, "Rule Description"),
            column_index(h, "Estimated Speedup Type"), column_index(h, "Estimated Speedup")};
  }
  std::size_t last_required() const { return std::max({id, kernel, section, name, value}); }
};

void fill_identity(kernel_instance& k, const std::vector<std::string>& row, std::size_t kernel_col,
                   std::size_t process_col, std::size_t device_col, std::size_t cc_col,
                   std::size_t block_col, std::size_t grid_col) {
  k.name = field_or_empty(row, kernel_col);
  k.function = function_name_of(k.name);
  if (process_col != no_column) k.process = field_or_empty(row, process_col);
  if (device_col != no_column) k.device = field_or_empty(row, device_col);
  if (cc_col != no_column) k.compute_capability = field_or_empty(row, cc_col);
  if (block_col != no_column)
    if (auto d = parse_dim3(field_or_empty(row, block_col))) k.launch.block = *d;
  if (grid_col != no_column)
    if (auto d = parse_dim3(field_or_empty(row, grid_col))) k.launch.grid = *d;
}

// Launch facts that are metrics rather than columns, from whichever page supplied them.
void derive_launch(kernel_instance& k) {
  auto pick = [&](std::optional<double>& slot, std::initializer_list<std::string_view> names) {
    if (slot) return;
    for (auto n : names) {
      if (const metric* m = k.find(n); m && m->value) {
        slot = to_base_unit(*m->value, m->unit).value;  // Kbyte/block → bytes
        return;
      }
    }
  };
  pick(k.launch.registers_per_thread, {"Registers Per Thread", "launch__registers_per_thread"});
  pick(k.launch.static_shared_bytes, {"Static Shared Memory Per Block", "launch__shared_mem_per_block_static"});
  pick(k.launch.dynamic_shared_bytes, {"Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic"});
  pick(k.launch.shared_config_bytes, {"Shared Memory Configuration Size", "launch__shared_mem_config_size"});
  pick(k.launch.sm_count, {"# SMs", "launch__sm_count"});
  pick(k.launch.waves_per_sm, {"Waves Per SM", "launch__waves_per_multiprocessor"});
}

}  // namespace

profile_report parse_ncu_details(std::string_view csv_text) {
  csv_reader reader(csv_text);
  std::vector<std::string> row;
  std::vector<std::string> header;
  while (reader.next(row)) {
    if (!row.empty() && row[0] == "ID" && column_index(row, "Metric Name") != no_column) {
      header = row;
      break;
    }
  }
  if (header.empty())
    throw ncu_parse_error("not an Nsight Compute details page: no header row with \"ID\" and "
                          "\"Metric Name\" (export it with: ncu -i REPORT --csv --page details)");
  const auto c = details_columns::of(header);
  for (auto [col, name] : {std::pair{c.kernel, "Kernel Name"}, {c.section, "Section Name"},
                           {c.value, "Metric Value"}}) {
    if (col == no_column)
      throw ncu_parse_error(std::string("details page lacks the \"") + name + "\" column");
  }

  profile_report report;
  std::map<std::string, std::size_t> index_of;  // "ID/process" → position in report.kernels
  std::size_t skipped = 0;
  while (reader.next(row)) {
    // Data rows start with a numeric ID and reach the value column; anything else is an
    // embedded table (NVLink topology, NUMA affinity) or the program's own output.
    const auto id = row.size() > c.last_required() ? launch_id(row[c.id]) : std::nullopt;
    if (!id) {
      if (!(row.size() == 1 && row[0].empty())) ++skipped;
      continue;
    }
    const std::string key = row[c.id] + '/' + field_or_empty(row, c.process_id);
    auto [it, inserted] = index_of.emplace(key, report.kernels.size());
    if (inserted) {
      kernel_instance k;
      k.id = *id;
      fill_identity(k, row, c.kernel, c.process, c.device, c.cc, c.block, c.grid);
      report.kernels.push_back(std::move(k));
    }
    kernel_instance& k = report.kernels[it->second];
    const std::string& rule = field_or_empty(row, c.rule);
    if (!rule.empty()) {
      rule_result r;
      r.section = row[c.section];
      r.name = rule;
      r.type = field_or_empty(row, c.rule_type);
      r.text = field_or_empty(row, c.rule_text);
      r.speedup_type = field_or_empty(row, c.speedup_type);
      r.estimated_speedup = parse_metric_number(field_or_empty(row, c.speedup));
      k.rules.push_back(std::move(r));
      continue;
    }
    if (row[c.name].empty()) continue;
    metric m;
    m.section = row[c.section];
    if (c.label != no_column) m.label = field_or_empty(row, c.label);
    m.name = row[c.name];
    if (c.unit != no_column) m.unit = field_or_empty(row, c.unit);
    m.text = row[c.value];
    m.value = parse_metric_number(m.text);
    k.metrics.push_back(std::move(m));
  }
  for (auto& k : report.kernels) {
    k.reindex();
    derive_launch(k);
  }
  std::stable_sort(report.kernels.begin(), report.kernels.end(),
                   [](const kernel_instance& a, const kernel_instance& b) { return a.id < b.id; });
  if (skipped)
    report.warnings.push_back("skipped " + std::to_string(skipped) +
                              " lines that are not rows of the details table");
  return report;
}

void merge_ncu_raw(profile_report& report, std::string_view csv_text) {
  csv_reader reader(csv_text);
  std::vector<std::string> row;
  std::vector<std::string> header;
  while (reader.next(row)) {
    if (!row.empty() && row[0] == "ID" && column_index(row, "Kernel Name") != no_column) {
      header = row;
      break;
    }
  }
  if (header.empty())
    throw ncu_parse_error("not an Nsight Compute raw page: no header row with \"ID\" and "
                          "\"Kernel Name\" (export it with: ncu -i REPORT --csv --page raw)");
  const std::size_t id_col = 0;
  const std::size_t kernel_col = column_index(header, "Kernel Name");
  std::vector<std::string> units(header.size());
  // Identity columns that are not metrics.
  std::vector<bool> is_identity(header.size(), false);
  for (auto name : {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                    "Stream", "Block Size", "Grid Size", "Device", "CC"})
    if (auto i = column_index(header, name); i != no_column) is_identity[i] = true;

  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < report.kernels.size(); ++i)
    index_of.emplace(std::to_string(report.kernels[i].id), i);
  bool first = true;
  while (reader.next(row)) {
    if (first && !row.empty() && row[0].empty()) {  // the units row of --print-units base
      for (std::size_t i = 0; i < row.size() && i < units.size(); ++i) units[i] = row[i];
      first = false;
      continue;
    }
    first = false;
    const auto id = row.size() >= header.size() / 2 ? launch_id(row[id_col]) : std::nullopt;
    if (!id) continue;
    auto it = index_of.find(row[id_col]);
    if (it == index_of.end()) {
      kernel_instance k;
      k.id = *id;
      fill_identity(k, row, kernel_col, column_index(header, "Process Name"),
                    column_index(header, "Device"), column_index(header, "CC"),
                    column_index(header, "Block Size"), column_index(header, "Grid Size"));
      report.kernels.push_back(std::move(k));
      it = index_of.emplace(row[id_col], report.kernels.size() - 1).first;
    }
    kernel_instance& k = report.kernels[it->second];
    // A metric asked for with --metrics is also a details row ("Command line profiler metrics"),
    // printed in scaled units ("us", "Msector", "Krequest"); the raw page's base-unit figure
    // replaces it, so that a lookup by the raw name reads one unit whichever page has it.
    std::map<std::string, std::size_t> details_row;
    for (std::size_t j = 0; j < k.metrics.size(); ++j)
      if (k.metrics[j].section != "raw") details_row.emplace(k.metrics[j].name, j);
    for (std::size_t i = 0; i < header.size() && i < row.size(); ++i) {
      if (is_identity[i] || header[i].empty()) continue;
      if (const auto d = details_row.find(header[i]); d != details_row.end()) {
        auto& m = k.metrics[d->second];
        m.unit = units[i];
        m.text = row[i];
        m.value = parse_metric_number(m.text);
      }
      metric m;
      m.section = "raw";
      m.name = header[i];
      m.unit = units[i];
      m.text = row[i];
      m.value = parse_metric_number(m.text);
      k.metrics.push_back(std::move(m));
    }
  }
  for (auto& k : report.kernels) {
    k.reindex();
    derive_launch(k);
    if (k.launch.block.total() == 1)
      if (auto x = k.value("launch__block_dim_x"))
        k.launch.block = {static_cast<long long>(*x),
                          static_cast<long long>(k.value("launch__block_dim_y").value_or(1)),
                          static_cast<long long>(k.value("launch__block_dim_z").value_or(1))};
    if (k.launch.grid.total() == 1)
      if (auto x = k.value("launch__grid_dim_x"))
        k.launch.grid = {static_cast<long long>(*x),
                         static_cast<long long>(k.value("launch__grid_dim_y").value_or(1)),
                         static_cast<long long>(k.value("launch__grid_dim_z").value_or(1))};
  }
  std::stable_sort(report.kernels.begin(), report.kernels.end(),
                   [](const kernel_instance& a, const kernel_instance& b) { return a.id < b.id; });
}


}  // namespace kblaster::engine
