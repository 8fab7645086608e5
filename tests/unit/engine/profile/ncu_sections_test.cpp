// The sections kblaster asks ncu for are the ones it reads. The recorded H100 reports in
// tests/fixtures/ncu-h100/ were taken with `--set full`; a live profile asks only for
// requested_ncu_sections(), and every section costs replay passes. Here each full report's details
// page is cut down to what the requested sections would have printed (metric rows carry the
// section's display name, rule rows its identifier) and analysed again:
//   - nothing the classifier, the KB evidence, the hover's view or the prompt's summary shows may
//     change: a section it needs must be on the list;
//   - leaving out any one listed section must change something on some report: a section nothing
//     reads must not be on the list.
// The raw page names no section, so it cannot be cut the same way. A live profile always has it
// (with default_ncu_metrics() in it), so the first check keeps it whole. The second also looks
// without it, so that a section whose figure the raw page repeats under its metric name
// (MemoryWorkloadAnalysis's spill requests, derived__local_spilling_requests) is still seen to be read.
#include "engine/profile/csv_reader.h"
#include "engine/profile/ncu_runner.h"
#include "engine/state/profile_pipeline.h"
#include "engine/state/profile_summary.h"
#include "engine/state/state_evidence.h"
#include "support/files.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace kblaster;
namespace fs = std::filesystem;

namespace {

fs::path fixtures() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100"; }

// The one-kernel reports recorded with --set full (app_sections.details.csv was taken with a
// section list of its own and says nothing about the full set).
std::vector<std::string> full_reports() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fixtures())) {
    const auto name = e.path().filename().string();
    if (name.ends_with(".details.csv") && fs::exists(fixtures() / (name.substr(0, name.size() - 12) + ".raw.csv")))
      names.push_back(name.substr(0, name.size() - 12));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string quoted(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    line += i ? ",\"" : "\"";
    for (char c : fields[i]) line += c == '"' ? std::string("\"\"") : std::string(1, c);
    line += '"';
  }
  return line + "\n";
}

// The details page as ncu would have printed it with only `sections` asked for.
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

// Everything a user or the model is shown of the report, and what the KB is told.
std::string shown(const std::string& details, const std::string& raw) {
  const auto outcome = engine::analyze_pages(details, raw, "");
  REQUIRE(outcome.error.empty());
  std::string all;
  for (const auto& v : outcome.kernels) {
    const auto e = engine::kb_evidence(v.signature);
    all += engine::to_json(v).dump(1) + "\n" + engine::summarize_for_prompt(v) + "\n" + e.primary + "\n";
    for (const auto& c : e.secondary) all += c.name + " " + std::to_string(c.weight) + "\n";
    for (const auto& f : e.facts) all += f + "\n";
  }
  return all;
}

// The first line where two texts differ, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  const auto from = a.rfind('\n', at) == std::string::npos ? 0 : a.rfind('\n', at) + 1;
  return "the full set: " + a.substr(from, a.find('\n', at) - from) + "\n  the sections asked: " + b.substr(from, b.find('\n', at) - from);
}

}  // namespace

TEST_CASE("the sections asked of ncu give every recorded report what the full set gives") {
  const auto names = full_reports();
  REQUIRE(names.size() >= 9);
  for (const auto& name : names) {
    CAPTURE(name);
    const auto details = support::read_file((fixtures() / (name + ".details.csv")).string());
    const auto raw = support::read_file((fixtures() / (name + ".raw.csv")).string());
    const auto full = shown(details, raw);
    const auto asked = shown(only_sections(details, engine::requested_ncu_sections()), raw);
    INFO(first_difference(full, asked));
    CHECK(full == asked);
  }
}

TEST_CASE("every section asked of ncu is read: leaving it out changes what some report shows") {
  const auto names = full_reports();
  const auto& sections = engine::requested_ncu_sections();
  for (std::size_t left_out = 0; left_out < sections.size(); ++left_out) {
    auto fewer = sections;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(left_out));
    bool changed = false;
    for (std::size_t i = 0; i < names.size() && !changed; ++i) {
      const auto details = support::read_file((fixtures() / (names[i] + ".details.csv")).string());
      const auto raw = support::read_file((fixtures() / (names[i] + ".raw.csv")).string());
      for (const auto& with_raw : {raw, std::string()})
        changed = changed || shown(only_sections(details, sections), with_raw) != shown(only_sections(details, fewer), with_raw);
    }
    CHECK_MESSAGE(changed, "nothing reads " << sections[left_out].identifier << ": leave it out of the request");
  }
}
