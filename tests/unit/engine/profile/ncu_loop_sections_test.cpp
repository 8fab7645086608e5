// The optimization loop's profiles ask ncu for loop_ncu_sections() only: what the loop reads of a
// profile is the state (primary and secondary), the KB evidence and the prompt's summary, through
// snapshot_from_ncu_pages, the live evaluator's own reading of a report's pages (the hover's view
// it keeps is a record, read by nobody in the loop). As in ncu_sections_test.cpp, each recorded
// H100 report's details page is cut down to what a section list would have printed, and:
//   - the loop's list must give every report the state, evidence and summary the editor's list
//     (requested_ncu_sections()) gives: a section the loop reads must be on it;
//   - leaving out any one section of the loop's list must change one of them on some report: a
//     section the loop does not read must not be on it.
// The raw page names no section, yet a section's own metrics leave it with the section
// (MemoryWorkloadAnalysis takes derived__local_spilling_requests with it; the Tables, the atomic
// and reuse counters). So both checks look with the raw page whole and without it.
// The reports: tests/fixtures/ncu-h100 (--set full) and tests/fixtures/ncu-h100-rewrites (recorded
// with requested_ncu_sections()).
#include "engine/evaluate/harness_evaluator.h"
#include "engine/profile/ncu_runner.h"
#include "support/files.h"
#include "tests/unit/engine/profile/ncu_report_cut.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace kblaster;
namespace fs = std::filesystem;

namespace {

struct recorded_report {
  std::string name;
  std::string details;
  std::string raw;
};

std::vector<recorded_report> recorded_reports() {
  std::vector<recorded_report> out;
  for (const auto& folder : {test::ncu_h100_fixtures(), test::ncu_h100_rewrite_fixtures()})
    for (const auto& name : test::reports_in(folder))
      out.push_back({folder.filename().string() + "/" + name, support::read_file((folder / (name + ".details.csv")).string()),
                     support::read_file((folder / (name + ".raw.csv")).string())});
  return out;
}

// The loop's list as sections (identifier and display name), each one the editor asks for too.
std::vector<engine::ncu_section> loop_sections() {
  std::vector<engine::ncu_section> out;
  for (const auto& id : engine::loop_ncu_sections()) {
    const auto& all = engine::requested_ncu_sections();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.identifier == id; });
    REQUIRE_MESSAGE(it != all.end(), "the loop asks for " << id << ", which the editor's list does not have");
    out.push_back(*it);
  }
  return out;
}

// What the loop reads of a report: the profiled kernel, its state, the KB evidence, the prompt's
// summary and the elapsed cycles.
std::string loop_reads(const std::string& details, const std::string& raw) {
  std::string error;
  const auto snap = engine::optimize::snapshot_from_ncu_pages(details, raw, "", nullptr, error);
  REQUIRE_MESSAGE(snap, error);
  std::string all = "kernel " + snap->kernel + "\nprimary " + snap->primary + "\nsecondary";
  for (const auto& s : snap->secondary) all += " " + s;
  const auto& e = snap->evidence;
  all += "\nevidence " + e.primary + " " + std::to_string(e.primary_weight) + (e.measured ? " measured" : "") + "\n";
  for (const auto& c : e.secondary) all += "  " + c.name + " " + std::to_string(c.weight) + "\n";
  for (const auto& f : e.facts) all += "  fact " + f + "\n";
  all += "cycles " + (snap->elapsed_cycles ? std::to_string(*snap->elapsed_cycles) : std::string("-")) + "\n";
  return all + snap->summary;
}

}  // namespace

TEST_CASE("the loop's sections give every recorded report the state, evidence and summary the editor's sections give") {
  const auto reports = recorded_reports();
  REQUIRE(reports.size() >= 18);
  const auto loop = loop_sections();
  for (const auto& r : reports) {
    CAPTURE(r.name);
    for (const auto& raw : {r.raw, std::string()}) {
      CAPTURE(raw.empty());
      const auto editor = loop_reads(test::only_sections(r.details, engine::requested_ncu_sections()), raw);
      const auto asked = loop_reads(test::only_sections(r.details, loop), raw);
      INFO(test::first_difference(editor, asked, "the editor's sections", "the loop's sections"));
      CHECK(editor == asked);
    }
  }
}

TEST_CASE("every section the loop asks of ncu is read by it: leaving it out changes a state, evidence or summary") {
  const auto reports = recorded_reports();
  const auto loop = loop_sections();
  for (std::size_t left_out = 0; left_out < loop.size(); ++left_out) {
    auto fewer = loop;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(left_out));
    bool changed = false;
    for (std::size_t i = 0; i < reports.size() && !changed; ++i)
      for (const auto& raw : {reports[i].raw, std::string()})
        changed = changed || loop_reads(test::only_sections(reports[i].details, loop), raw) !=
                                 loop_reads(test::only_sections(reports[i].details, fewer), raw);
    CHECK_MESSAGE(changed, "the loop reads nothing of " << loop[left_out].identifier << ": leave it out of loop_ncu_sections()");
  }
}
