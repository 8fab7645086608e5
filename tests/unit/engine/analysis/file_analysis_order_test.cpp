// file_analyzer's order: requests reserve their place where they arrive in order; an older
// request that reaches a worker thread late returns nullptr instead of replacing a newer result
// (two saves in quick succession under load published the first save's diagnostics last).
#include "engine/analysis/file_analysis.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

TEST_CASE("an analysis with an older ticket than the newest reserved returns nullptr at once") {
  analysis_capabilities none;  // no nvcc: the static part reports that, no compiler runs
  file_analyzer analyzer(none);
  file_analysis_options o;
  o.debounce = std::chrono::milliseconds(0);
  o.profile_live = false;
  const auto first = analyzer.reserve("/w/a.cu");
  const auto second = analyzer.reserve("/w/a.cu");
  CHECK(second > first);
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k() {}", o, {}, first) == nullptr);
  const auto newest = analyzer.analyze("/w/a.cu", "__global__ void k() {}", o, {}, second);
  REQUIRE(newest != nullptr);
  CHECK(analyzer.latest("/w/a.cu") == newest);
  // Another file keeps its own order.
  CHECK(analyzer.analyze("/w/b.cu", "__global__ void k() {}", o, {}, analyzer.reserve("/w/b.cu")) != nullptr);
  // Without a ticket a call takes the next place itself, superseding reserved ones.
  const auto reserved = analyzer.reserve("/w/a.cu");
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k2() {}", o, {}) != nullptr);
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k2() {}", o, {}, reserved) == nullptr);
}
