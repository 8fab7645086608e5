// What a candidate costs, summarised over a run (or a bench): how many seconds the device was
// held per candidate and where they went (harness start, reference, runner, verification,
// timing, profile), and how much of the build the loop waited for. Medians, because one ncu run
// on a large kernel or one harness start would drown a mean.
#pragma once

#include "engine/evaluate/evaluator.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::optimize {

struct cost_summary {
  int candidates = 0;
  int profiled = 0;              ///< candidates with an ncu (or static) profile taken
  double median_device = 0;      ///< seconds the device was held per candidate
  double mean_device = 0;
  double median_wall = 0;        ///< the device's seconds plus the build waited for
  phase_seconds median;          ///< each phase's median over the candidates
  double total_device = 0;
};

/// The summary of `phases`, one entry per candidate (each counted once).
cost_summary summarize_costs(const std::vector<phase_seconds>& phases);

nlohmann::json to_json(const cost_summary& c);

/// "median 1.42 s of device time per candidate (build 1.90 s, waited 0.31 s; ... ), 3 of 28 profiled";
/// `noun` names what was summarised ("candidate", "input kernel").
std::string describe_costs(const cost_summary& c, const std::string& noun = "candidate");

/// The input kernel's measurement in one line: "4.17 s of device time, once (harness start 0.49 s,
/// verify 0.11 s, time 1.92 s with the reference's, profile 2.29 s)", the profile said to be kept when
/// it was reused.
std::string describe_input_cost(const phase_seconds& p, bool profile_reused);

}  // namespace kblaster::engine::optimize
