// The run report: the trajectory tree (states, techniques, predicted versus measured speedups,
// tokens, GPU time) as JSON for tools and as Markdown for people.
#pragma once

#include "engine/optimize/loop_context.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace kblaster::engine::optimize {

/// The report of a finished (or stopped) run, from its checkpoint.
nlohmann::json build_run_report(loop_context& ctx, const optimize_result& result, const version& baseline,
                                const version& best);

/// Why a run stopped, in words for the user; empty for a run that finished its iterations.
std::string describe_stop(const stop_reason& reason);

/// The report as Markdown: a summary table, then each iteration's trajectories step by step.
std::string render_run_report(const nlohmann::json& report);

}  // namespace kblaster::engine::optimize
