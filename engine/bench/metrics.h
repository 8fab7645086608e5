// Bench metrics per level and overall: valid rate; speedup over eager, over torch.compile and
// over the better of the two (the paper's baseline) as mean, geometric mean, median, min, max and
// share above 1x; fast_p for p = 0, 0.1, ..., 4 (KernelBench's: the share of ALL problems whose
// final kernel is correct and more than p times faster); tokens, GPU time, speedup per token;
// technique usage by success and failure; states visited. A degenerate problem (its reference's
// output constant over the declared inputs, or ignoring an input: problem_result::degenerate) is
// counted, and left out of the valid rate, the speedups and fast_p: its verification proves little.
#pragma once

#include "engine/bench/problem_result.h"
#include "engine/optimize/candidate_cost.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// Order statistics of a sample of speedups (all zero with n == 0).
struct speedup_summary {
  int n = 0;
  double mean = 0, geomean = 0, median = 0, min = 0, max = 0;
  double share_above_1 = 0;  ///< of the sample: speedup > 1
};

/// Summary of `values` (every value must be > 0; others are ignored).
speedup_summary summarize(const std::vector<double>& values);

/// fast_p thresholds: 0, 0.1, ..., 4.0 (41 values, exact decimals).
const std::vector<double>& fast_p_thresholds();

/// Share of `total` problems whose speedup (present only for valid results) is > p, per threshold.
std::vector<double> fast_p_curve(const std::vector<std::optional<double>>& speedups, int total);

/// Metrics of one group of problems (a level, or all of them).
struct group_metrics {
  std::string name;  ///< "level 1", ..., "all"
  int level = 0;     ///< 0 for "all"
  int problems = 0;    ///< every problem of the group, degenerate ones included
  int degenerate = 0;  ///< left out of valid, valid_rate, the speedups and fast_p
  int valid = 0;       ///< of the problems that are not degenerate
  double valid_rate = 0;  ///< valid over the problems that are not degenerate
  speedup_summary eager, compile, best;  ///< over eager, torch.compile, the better of the two
  std::vector<double> fast_p_eager, fast_p_compile, fast_p_best;  ///< per fast_p_thresholds()
  std::int64_t tokens = 0;
  double gpu_seconds = 0, wall_seconds = 0;
  int candidates = 0;
  optimize::cost_summary cost;  ///< seconds per candidate, over the group's problems
  optimize::cost_summary input_cost;  ///< seconds per input kernel (one per problem that kept it apart)
  /// geomean best-baseline speedup per million tokens spent per problem; absent with no tokens
  std::optional<double> speedup_per_mtoken;
  std::map<std::string, int> statuses;  ///< ok, import_failed, no_initial_kernel, ...
};

/// Per technique: attempts that succeeded and that failed.
struct technique_counts {
  int success = 0, failure = 0;
};

/// Everything the report shows for one run.
struct run_metrics {
  std::string name;                   ///< the run's label (its directory name unless given)
  std::vector<group_metrics> levels;  ///< ascending level
  group_metrics overall;
  std::map<std::string, technique_counts> techniques;
  std::map<std::string, int> states;  ///< versions seen in each state
};

/// Computes a run's metrics. Results of the same (level, problem) must not repeat.
run_metrics compute_metrics(const std::string& name, const std::vector<problem_result>& results);

nlohmann::json to_json(const speedup_summary& s);
nlohmann::json to_json(const group_metrics& g);
nlohmann::json to_json(const run_metrics& m);

}  // namespace kblaster::engine::bench
