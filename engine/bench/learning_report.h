// The learning curve's report: learning.md (the per-task attempts to 90 % of the best, the arms'
// totals against the goal, the curve at selected attempt counts, the start KBs' state coverage
// and statistics by architecture) and learning.html (the same, with the best-speedup-per-attempt
// curves drawn by Chart.js, overall and per task). learning.json holds both inputs.
#pragma once

#include "engine/bench/learning_curve.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// The experiment around the figures.
struct learning_context {
  std::vector<std::string> train, test;  ///< problem keys
  std::string gpu, command, foreign_arch;
  std::string evaluator;  ///< what measured the candidates: live on the GPU, or a replay of a recording made there
  nlohmann::json hyperparameters = nlohmann::json::object();  ///< the held-out arms'
  int train_breadth = 0;                                      ///< the training arm's breadth
  /// Per arm: the statistics rows of its start KB by architecture, and what its held-out runs
  /// added to them (summed over the problems' own copies).
  std::map<std::string, std::map<std::string, arch_rows>> start_rows, added_rows;
  std::vector<std::string> failed;  ///< "cold-s1 L1_X: status: why", runs left out
};

nlohmann::json to_json(const learning_context& c);

/// The Markdown report.
std::string learning_markdown(const learning_summary& s, const learning_context& c);

/// The HTML page (Chart.js inlined). Throws std::invalid_argument when `chartjs` is empty.
std::string learning_html(const learning_summary& s, const learning_context& c, const std::string& chartjs);

}  // namespace kblaster::engine::bench
