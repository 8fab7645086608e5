// The hover's performance section for a live profile: where the profile came from (a captured
// launch replayed alone), the launch, the achieved rates against the GPU's peaks; and, for a
// kernel the live profile could not cover, why, instead of a bare "not measured".
#include "engine/state/profile_pipeline.h"
#include "server/features/kernel_text.h"

#include <doctest/doctest.h>

#include <string>

using namespace kblaster;

namespace {

std::string fixture(const std::string& name) { return std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/" + name; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a kernel profiled from its captured launch: origin, launch and achieved rates in the hover") {
  engine::file_analysis a;
  a.analysed_at = "2026-11-24T19:40:00Z";
  a.live_profile = engine::analyze_recorded(fixture("fma_heavy.details.csv"), fixture("fma_heavy.raw.csv"));
  REQUIRE(a.live_profile->error.empty());
  const auto& v = a.live_profile->kernels.at(0);
  a.live_profile->origins[v.signature.function] =
      "launch 0 of fma.cu 1024 (grid (65536, 1, 1), block (256, 1, 1)), captured and replayed alone under ncu; 1.078 ms in the program";
  const auto md = server::performance_markdown(a, v, {});
  CHECK(has(md, "Profiled: launch 0 of fma.cu 1024"));
  CHECK(has(md, "replayed alone under ncu; 1.078 ms in the program"));
  CHECK(has(md, "- Achieved: DRAM 41.3 GB/s of 3.35 TB/s (1.2%); FP32 "));
  CHECK(has(md, "- Launch: grid (65536, 1, 1) x block ("));
  CHECK(has(md, "Last runtime: **1.080 ms** (live profile"));

  // Without an origin (the whole program under ncu) the line is absent, the rest the same.
  a.live_profile->origins.clear();
  const auto whole = server::performance_markdown(a, v, {});
  CHECK_FALSE(has(whole, "Profiled:"));
  CHECK(has(whole, "- Achieved: DRAM"));
}

TEST_CASE("the lens's time says it is ncu's when it is (locked clocks, not the program's time)") {
  // On an H200 the lens of a captured kernel read "latency bound memory stalls · 8.5 µs" beside
  // its share lens's "5.4 us" in the program: two times, unlabelled.
  engine::file_analysis a;
  a.live_profile = engine::analyze_recorded(fixture("fma_heavy.details.csv"), fixture("fma_heavy.raw.csv"));
  REQUIRE(a.live_profile->error.empty());
  const auto& v = a.live_profile->kernels.at(0);
  CHECK(has(server::performance_line(v, {}, ""), " ms under ncu"));
  engine::kernel_insight measured;
  measured.last_runtime = engine::measured_runtime{0.5, "2026-11-24T19:40:00Z", "harness"};
  const auto line = server::performance_line(v, measured, "");
  CHECK(has(line, "500.0 µs"));
  CHECK_FALSE(has(line, "under ncu"));
}

TEST_CASE("a kernel the captured profile could not cover says why") {
  engine::file_analysis a;
  a.analysed_at = "2026-11-24T19:40:00Z";
  a.live_profile.emplace();
  a.live_profile->not_profiled["unused_kernel"] =
      "its launch could not be captured (the program exited before launch 0 of unused_kernel was captured; its output:)";
  engine::kernel_view v;
  v.signature.function = "unused_kernel";
  v.signature.static_only = true;
  const auto md = server::performance_markdown(a, v, {});
  CHECK(has(md, "Last runtime: not measured yet (unused_kernel was not profiled: its launch could not be captured"));
  CHECK_FALSE(has(md, "Profiled:"));
  // Another kernel's reason is not this one's.
  v.signature.function = "unused";
  CHECK(has(server::performance_markdown(a, v, {}), "Last runtime: not measured yet\n"));
}

TEST_CASE("a strategy says what its prediction was learnt from, and the state's lessons follow") {
  engine::file_analysis a;
  a.analysed_at = "2026-11-28T19:40:00Z";
  a.live_profile = engine::analyze_recorded(fixture("fma_heavy.details.csv"), fixture("fma_heavy.raw.csv"));
  REQUIRE(a.live_profile->error.empty());
  const auto& v = a.live_profile->kernels.at(0);
  engine::kernel_insight insight;
  insight.kb_state = "fp32_compute_saturated";
  engine::strategy learnt;
  learnt.technique = "fast_math_intrinsics";
  learnt.predicted_speedup = 2.4;
  learnt.attempts = 9;
  learnt.steps = 4;
  learnt.gains = 3;
  learnt.tasks = {"spmv_csr", "row_softmax"};
  learnt.arch = "sm_90";
  engine::strategy once = learnt;
  once.technique = "loop_unrolling";
  once.steps = once.gains = 1;
  once.tasks = {"gemm"};
  once.arch = "all";
  engine::strategy prior;
  prior.technique = "algebraic_simplification";
  prior.predicted_speedup = 1.1;
  insight.strategies = {learnt, once, prior};
  insight.lessons = {{"fast_math_intrinsics", "__expf kept the tolerance on every softmax"}, {"", "FMA-bound: fewer ops"}};
  const auto md = server::performance_markdown(a, v, insight);
  CHECK(has(md, "| technique | predicted | learnt from |"));
  CHECK(has(md, "| `fast_math_intrinsics` | 2.40× | 3 gains in 4 tries, on spmv_csr and row_softmax, sm_90 |"));
  CHECK(has(md, "| `loop_unrolling` | 2.40× | 1 gain in 1 try, on gemm, any GPU |"));
  CHECK(has(md, "| `algebraic_simplification` | 1.10× | prior only, not measured yet |"));
  CHECK(has(md, "**Lessons** learnt in this state"));
  CHECK(has(md, "- `fast_math_intrinsics`: __expf kept the tolerance on every softmax"));
  CHECK(has(md, "- FMA-bound: fewer ops"));
  // A lesson is a model's text: one line, bounded, never cut inside a character.
  insight.lessons = {{"", std::string(299, 'x') + "é and more\n[a link](http://example.com) " + std::string(400, 'y')}};
  const auto bounded = server::performance_markdown(a, v, insight);
  CHECK(has(bounded, "- " + std::string(299, 'x') + "…\n"));
  CHECK_FALSE(has(bounded, "example.com"));
}
