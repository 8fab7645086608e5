// Recorded whole-problem outcomes: what the loop measured for a problem on a GPU (times, tokens,
// techniques, states), saved as RECORDED/L<level>_<name>.json and served instead of running the
// loop. Used by CI to run the whole pipeline (import, store, shards, Slurm, merge, report) on a
// machine without a GPU, with figures that can be checked by hand; and to rebuild a report.
// A file: {"$source": "...", "eager_ms", "compile_ms", "reference_ms", "input_ms", "best_ms",
// "tokens", "gpu_seconds", "candidates", "techniques": [{"technique","success"}], "states_visited",
// "degenerate": "why" (the reference probe's summary), "input_failed": "why", "attempts":
// [{"technique","state","speedup"}] (problem_result::attempts), "arch"} (every field optional;
// "input_failed" makes the input unusable).
#pragma once

#include "engine/bench/runner.h"

#include <filesystem>

namespace kblaster::engine::bench {

/// Sets hooks.optimize and hooks.amend to serve outcomes from `dir`. A problem with no file there
/// fails with status error ("no recorded outcome"), like a replay miss.
void use_recorded_outcomes(bench_hooks& hooks, const std::filesystem::path& dir);

}  // namespace kblaster::engine::bench
