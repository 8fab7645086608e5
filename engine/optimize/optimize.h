// The MAIC-RL optimization loop (Algorithm 2 of arXiv 2602.14293), as one call: K iterations of
// B trajectories of depth T. A step profiles the current best correct version, extracts its
// state, retrieves and selects techniques from the KB, applies one (mechanical tier or the
// lowering agent), evaluates the candidate and records the attempt with its new state. After
// each iteration the attempts are committed to the KB (numeric statistics) and the
// textual-gradient agents edit the KB. Checkpointed after every step; resumable.
#pragma once

#include "engine/evaluate/evaluator.h"
#include "engine/task/task.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::llm {
class llm_client;
}

namespace kblaster::engine::optimize {

/// Limits of one run (0: unlimited). The run stops cleanly at the first one reached; limits are
/// checked between steps, so steps already running finish (one per running trajectory).
struct budgets {
  std::int64_t tokens = 0;
  double gpu_seconds = 0;
  double wall_seconds = 0;
  int candidates = 0;
};

/// The loop's hyperparameters. Defaults follow the paper's ablations (breadth 8, depth 4).
struct loop_options {
  int breadth = 8;
  int depth = 4;
  int iterations = 2;
  int top_k = 3;
  std::string policy = "ucb";  ///< ucb (the search credit, kb/selection_policy.h) | weighted | thompson | greedy (top-1, an ablation)
  std::uint64_t seed = 1;
  budgets limits;
  bool mechanical_first = true;     ///< probe the mechanical tier before asking the model
  bool textual_gradient = true;     ///< run agents 5-7 after each iteration (ablation: off)
  bool cycles_only = false;         ///< ablation: agents see only cycles, not the profile
  /// Profile every correct candidate, not only the versions whose state the loop needs (the
  /// input and each version a step starts from): every KB attempt then records the state it reached, at
  /// the price of an ncu run per candidate.
  bool profile_all = false;
  int max_repairs = 2;              ///< lowering agent's repair rounds per candidate
  int jobs = 0;                     ///< trajectories run in parallel; 0: breadth
  std::string arch;                 ///< architecture for KB statistics; empty: the evaluator's
  std::string only_technique;       ///< try only this technique ("Apply technique" in the editor)
};

/// One progress event: the CLI shows it as a line, the daemon as LSP $/progress.
struct progress_event {
  std::string phase;        ///< baseline | step_started | profile | step | gradient | done
  int iteration = 0, trajectory = 0, step = 0;
  int steps_done = 0, steps_total = 0;  ///< for a percentage
  int candidates = 0;
  double best_speedup = 1;  ///< best correct version so far over the input
  std::string message;      ///< one short sentence
};
using progress_callback = std::function<void(const progress_event&)>;

/// Everything a run needs besides the task.
struct run_environment {
  std::filesystem::path kb_path;        ///< the KB file (each thread opens its own connection)
  std::filesystem::path input;          ///< the kernel to optimize; empty: the task's kernel
  evaluator* eval = nullptr;            ///< required
  llm::llm_client* model = nullptr;     ///< null: mechanical tier only
  std::filesystem::path out_dir;        ///< checkpoint, best.cu, best.diff, report.md, report.json
  progress_callback progress;           ///< may be empty
  std::stop_token stop;                 ///< cancellation; the KB stays consistent
};

/// The outcome of a run.
/// Why a run ended.
/// `recorded`: no run took place; the whole outcome was served from a recording (kblaster bench
/// --recorded).
enum class stop_kind {
  finished, cancelled, budget_tokens, budget_gpu_seconds, budget_wall_seconds, budget_candidates, error, recorded,
  waiting,  ///< trajectories wait for answers of a deferred model (llm/deferred_backend.h): the same command resumes
};

struct stop_reason {
  stop_kind kind = stop_kind::finished;
  std::string error;  ///< what went wrong, for stop_kind::error

  bool operator==(stop_kind k) const { return kind == k; }
  /// The spelling reports, JSON and the checkpoint use: "finished", "budget_tokens", "error: WHAT".
  std::string to_string() const;
};

/// The step whose candidate became the run's best version: what the user is shown next to the
/// overall speedup, so that the KB's prediction and the measurement can be compared.
struct best_step {
  std::string state;      ///< the state the step started from
  std::string technique;
  std::optional<double> predicted_speedup;  ///< the KB's expectation when it chose the technique
  std::optional<double> measured_speedup;   ///< over the version the step started from
};

struct optimize_result {
  std::string run_id;
  std::string input_source, best_source;
  std::string diff;                       ///< unified diff of best against the input
  std::optional<double> input_ms, best_ms, reference_ms;
  double best_speedup = 1;                ///< input_ms / best_ms (1 when nothing better)
  optimize::stop_reason stop_reason;
  int candidates = 0, correct_candidates = 0;
  std::int64_t tokens = 0;
  double gpu_seconds = 0, wall_seconds = 0;
  /// The input kernel's measurement: verified, timed against the reference and profiled once per
  /// run (its profile is the save's, kept, when the editor profiled it first). Not a candidate:
  /// summaries per candidate leave it out and state it apart.
  std::optional<phase_seconds> input_phases;
  std::vector<phase_seconds> candidate_phases;  ///< per candidate after the input, each counted once
  std::vector<std::int64_t> attempt_ids;  ///< KB attempts recorded by this run
  std::optional<optimize::best_step> best_step;  ///< absent when no candidate beat the input
  nlohmann::json report;                  ///< the run report (trajectory tree) as JSON
  std::string report_markdown;
};

/// Runs (or resumes, when out_dir holds a checkpoint of the same task and options) the loop.
/// Throws std::invalid_argument for unusable options and evaluation_error when the input itself
/// cannot be evaluated; a failing candidate is never an exception.
optimize_result run_optimization(const task_spec& task, const loop_options& options, run_environment& env);

}  // namespace kblaster::engine::optimize
