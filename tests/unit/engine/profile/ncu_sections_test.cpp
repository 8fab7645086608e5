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
#include "engine/profile/ncu_runner.h"
#include "engine/state/profile_pipeline.h"
#include "engine/state/profile_summary.h"
#include "engine/state/state_evidence.h"
#include "support/files.h"
#include "tests/unit/engine/profile/ncu_report_cut.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace kblaster;
using test::first_difference;
using test::only_sections;
namespace fs = std::filesystem;

namespace {

fs::path fixtures() { return test::ncu_h100_fixtures(); }

// The one-kernel reports recorded with --set full (app_sections.details.csv was taken with a
// section list of its own and says nothing about the full set).
std::vector<std::string> full_reports() { return test::reports_in(fixtures()); }

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
