// What the editor is told while a file has no analysis yet: pending() says whether one is under
// way (a lens then says "analysing…", not "save to analyse"), and an analysis without a live
// profile says why in a typed reason (a client offers the remedy: ncuPath, a GPU machine).
#include "engine/analysis/file_analysis.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

namespace {
file_analysis_options quick() {
  file_analysis_options o;
  o.debounce = std::chrono::milliseconds(0);
  return o;
}
}  // namespace

TEST_CASE("a file is pending from its reservation until its analysis ends, however it ends") {
  analysis_capabilities none;  // no nvcc: the static part reports that, no compiler runs
  file_analyzer analyzer(none);
  CHECK_FALSE(analyzer.pending("/w/a.cu"));
  const auto ticket = analyzer.reserve("/w/a.cu");
  CHECK(analyzer.pending("/w/a.cu"));
  CHECK_FALSE(analyzer.pending("/w/b.cu"));
  REQUIRE(analyzer.analyze("/w/a.cu", "__global__ void k() {}", quick(), {}, ticket) != nullptr);
  CHECK_FALSE(analyzer.pending("/w/a.cu"));

  // Stopped before it finished: nothing analyses the file any more, so it is not pending.
  std::stop_source stopped;
  stopped.request_stop();
  const auto again = analyzer.reserve("/w/a.cu");
  CHECK(analyzer.pending("/w/a.cu"));
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k2() {}", quick(), stopped.get_token(), again) == nullptr);
  CHECK_FALSE(analyzer.pending("/w/a.cu"));

  // An older ticket that arrives late leaves the newer reservation pending.
  const auto older = analyzer.reserve("/w/a.cu");
  const auto newer = analyzer.reserve("/w/a.cu");
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k3() {}", quick(), {}, older) == nullptr);
  CHECK(analyzer.pending("/w/a.cu"));
  CHECK(analyzer.analyze("/w/a.cu", "__global__ void k3() {}", quick(), {}, newer) != nullptr);
  CHECK_FALSE(analyzer.pending("/w/a.cu"));

  // A closed document is forgotten, reservation and all.
  analyzer.reserve("/w/a.cu");
  analyzer.forget("/w/a.cu");
  CHECK_FALSE(analyzer.pending("/w/a.cu"));
}

TEST_CASE("why there is no live profile is typed, the machine's reasons first") {
  analysis_capabilities no_gpu;
  no_gpu.ncu = "/opt/ncu";
  file_analyzer without_gpu(no_gpu);
  auto a = without_gpu.analyze("/w/a.cu", "__global__ void k() {}", quick(), {});
  REQUIRE(a);
  CHECK(a->skipped == live_skip::no_gpu);
  CHECK(a->live_skipped == "no GPU on this machine");

  analysis_capabilities no_ncu;
  no_ncu.gpu_arch = "sm_90";
  file_analyzer without_ncu(no_ncu);
  auto options = quick();
  options.live_refusal = "the workspace is not trusted";  // the machine's limit is said first
  a = without_ncu.analyze("/w/a.cu", "__global__ void k() {}", options, {});
  REQUIRE(a);
  CHECK(a->skipped == live_skip::no_ncu);
  CHECK_FALSE(a->live_refused);

  analysis_capabilities both;
  both.gpu_arch = "sm_90";
  both.ncu = "/opt/ncu";
  file_analyzer able(both);
  a = able.analyze("/w/a.cu", "__global__ void k() {}", options, {});
  REQUIRE(a);
  CHECK(a->skipped == live_skip::refused);
  CHECK(a->live_refused);
  options.profile_live = false;
  a = able.analyze("/w/a.cu", "__global__ void k() {}", options, {});
  REQUIRE(a);
  CHECK(a->skipped == live_skip::off);
}
