#include "tests/unit/engine/profile/ncu_report_cut.h"

#include "engine/profile/csv_reader.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace fs = std::filesystem;

namespace kblaster::test {

namespace {

std::string quoted(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    line += i ? ",\"" : "\"";
    for (char c : fields[i]) line += c == '"' ? std::string("\"\"") : std::string(1, c);
    line += '"';
  }
  return line + "\n";
}

}  // namespace

fs::path ncu_h100_fixtures() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100"; }

fs::path ncu_h100_rewrite_fixtures() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100-rewrites"; }

std::vector<std::string> reports_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) {
    const auto name = e.path().filename().string();
    if (name.ends_with(".details.csv") && fs::exists(folder / (name.substr(0, name.size() - 12) + ".raw.csv")))
      names.push_back(name.substr(0, name.size() - 12));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string only_sections(const std::string& details, const std::vector<engine::ncu_section>& sections) {
  std::set<std::string> keep;
  for (const auto& s : sections) keep.insert(s.identifier), keep.insert(s.display_name);
  engine::csv_reader in(details);
  std::vector<std::string> row;
  REQUIRE(in.next(row));
  const auto section = engine::column_index(row, "Section Name");
  REQUIRE(section != engine::no_column);
  std::string out = quoted(row);
  while (in.next(row))
    if (section < row.size() && keep.count(row[section])) out += quoted(row);
  return out;
}

std::string only_metrics(const std::string& raw, const std::vector<std::string>& metrics) {
  const std::set<std::string> asked(metrics.begin(), metrics.end());
  engine::csv_reader in(raw);
  std::vector<std::string> header;
  REQUIRE(in.next(header));
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const auto& name = header[i];
    if (name.find("__") == std::string::npos || name.starts_with("launch__") || name.starts_with("device__") || asked.count(name))
      keep.push_back(i);
  }
  std::string out;
  for (std::vector<std::string> row = header; !row.empty();) {
    std::vector<std::string> kept;
    for (const auto i : keep) kept.push_back(i < row.size() ? row[i] : std::string());
    out += quoted(kept);
    if (!in.next(row)) break;
  }
  return out;
}

std::string metrics_details(const std::string& details, const std::string& raw, const std::vector<std::string>& metrics) {
  engine::csv_reader head(details);
  std::vector<std::string> header;
  REQUIRE(head.next(header));
  std::string out = quoted(header);
  engine::csv_reader in(raw);
  std::vector<std::string> names, units, row;
  REQUIRE(in.next(names));
  REQUIRE(in.next(units));  // --print-units base
  while (in.next(row)) {
    if (row.empty() || row[0].empty()) continue;
    for (const auto& metric : metrics) {
      const auto at = engine::column_index(names, metric);
      if (at == engine::no_column || at >= row.size()) continue;
      std::vector<std::string> fields(header.size());
      for (std::size_t c = 0; c < header.size(); ++c)
        if (const auto same = engine::column_index(names, header[c]); same != engine::no_column && same < row.size())
          fields[c] = row[same];
      std::string text = row[at], unit = units[at];
      text.erase(std::remove(text.begin(), text.end(), ','), text.end());
      char* end = nullptr;
      double value = std::strtod(text.c_str(), &end);
      if (end && end != text.c_str() && !unit.empty() && unit != "%") {
        if (unit == "ns" && value >= 1e3) value /= 1e3, unit = "us";
        else if (unit != "ns" && value >= 1e6) value /= 1e6, unit = "M" + unit;
        else if (unit != "ns" && value >= 1e3) value /= 1e3, unit = "K" + unit;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2f", value);
        text = buf;
      }
      fields[engine::column_index(header, "Section Name")] = "Command line profiler metrics";
      fields[engine::column_index(header, "Metric Name")] = metric;
      fields[engine::column_index(header, "Metric Unit")] = unit;
      fields[engine::column_index(header, "Metric Value")] = text;
      out += quoted(fields);
    }
  }
  return out;
}

std::string first_difference(const std::string& a, const std::string& b, const std::string& a_is, const std::string& b_is) {
  std::size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  const auto from = a.rfind('\n', at) == std::string::npos ? 0 : a.rfind('\n', at) + 1;
  return a_is + ": " + a.substr(from, a.find('\n', at) - from) + "\n  " + b_is + ": " + b.substr(from, b.find('\n', at) - from);
}

}  // namespace kblaster::test
