// A state from counters alone: the loop's profile of a step's best asks ncu for
// state_ncu_metrics() and no section, 13 replay passes where the sections take 36. Each recorded
// H100 report is cut down to what ncu would have printed for that list (no section rows, no rule;
// the raw page's launch and device attributes and the listed metrics), and the state the loop
// reads from it must be the state the editor's sections give: the same primary and the same
// secondaries. The counter rules of state_classifier.cpp stand in for ncu's rules; their thresholds
// (classifier_thresholds::excess_sectors_pct, store_bytes_per_sector, and the rules' own 5 %) sit
// between the nearest reports on either side (a tiled transpose's 5.6 % excess sectors and an
// SGEMM's 9.7 %; 4.4 % and 11 % conflict wavefronts; divergence costing 3.4 % and 6.2 % of issue).
#include "engine/evaluate/harness_evaluator.h"
#include "engine/profile/ncu_runner.h"
#include "kb/knowledge_base.h"
#include "support/files.h"
#include "tests/unit/engine/profile/ncu_report_cut.h"
#include "tests/unit/kb/kb_test_util.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kblaster;

namespace {

// What the next selection reads of a profile: the signature's primary and secondaries, and the KB
// state its evidence matches in the seed KB with the three techniques offered first there.
std::string state_of(const std::string& details, const std::string& raw, kb::knowledge_base& kb) {
  std::string error;
  const auto snap = engine::optimize::snapshot_from_ncu_pages(details, raw, "", nullptr, error);
  REQUIRE_MESSAGE(snap, error);
  CHECK_MESSAGE(snap->elapsed_cycles, "no elapsed cycles");
  std::string all = "kernel " + snap->kernel + "\nprimary " + snap->primary + "\nsecondary";
  for (const auto& s : snap->secondary) all += " " + s;
  const auto m = kb.match_state(snap->evidence, "sm_90");
  REQUIRE(m);
  all += "\nKB state " + m->state + (m->discovered ? " (discovered)" : "") + "\ntop 3";
  int n = 0;
  for (const auto& o : kb.optimizations_for(*m, snap->evidence, "sm_90"))
    if (n++ < 3) all += " " + o.technique;
  return all + "\n";
}

// What the loop asks ncu for: the state's counters and the roofline's.
std::vector<std::string> loop_metrics() {
  auto all = engine::state_ncu_metrics();
  for (const auto& m : engine::default_ncu_metrics()) all.push_back(m);
  return all;
}

}  // namespace

TEST_CASE("a state from state_ncu_metrics() alone is the state of the editor's sections, on every recorded report, and so is its KB state") {
  const kb_test::temp_dir dir;  // the seed KB, in a folder of its own
  auto kb = kb::knowledge_base::open(dir / "kb.sqlite");
  int reports = 0;
  for (const auto& folder : {test::ncu_h100_fixtures(), test::ncu_h100_rewrite_fixtures()})
    for (const auto& name : test::reports_in(folder)) {
      CAPTURE(name);
      ++reports;
      const auto details = support::read_file((folder / (name + ".details.csv")).string());
      const auto raw = support::read_file((folder / (name + ".raw.csv")).string());
      const auto editor = state_of(test::only_sections(details, engine::requested_ncu_sections()), raw, kb);
      const auto counters_raw = test::only_metrics(raw, loop_metrics());
      // ncu's details page of a --metrics run: the metrics' rows in scaled units (a lookup must
      // read the raw page's base units: a duration in "us" read as ns made every kernel
      // launch-bound on the H200), its header alone, or nothing.
      for (const auto& counters_details : {test::metrics_details(details, raw, loop_metrics()),
                                           test::only_sections(details, {}), std::string()}) {
        CAPTURE(counters_details.substr(0, 400));
        const auto counters = state_of(counters_details, counters_raw, kb);
        INFO(test::first_difference(editor, counters, "the editor's sections", "the state's counters"));
        CHECK(editor == counters);
      }
    }
  CHECK(reports >= 18);
}
