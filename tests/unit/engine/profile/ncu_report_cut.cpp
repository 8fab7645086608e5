#include "tests/unit/engine/profile/ncu_report_cut.h"

#include "engine/profile/csv_reader.h"

#include <doctest/doctest.h>

#include <algorithm>
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

std::string first_difference(const std::string& a, const std::string& b, const std::string& a_is, const std::string& b_is) {
  std::size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  const auto from = a.rfind('\n', at) == std::string::npos ? 0 : a.rfind('\n', at) + 1;
  return a_is + ": " + a.substr(from, a.find('\n', at) - from) + "\n  " + b_is + ": " + b.substr(from, b.find('\n', at) - from);
}

}  // namespace kblaster::test
