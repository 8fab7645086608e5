// One KernelBench problem's outcome in a bench run, as stored (one JSON file per problem per
// run) and as the metrics read it. The speedups are derived here, in one place, so the report,
// the merge step and the tests agree on what "speedup over torch.compile" means.
#pragma once

#include "engine/evaluate/evaluator.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// One technique tried on the problem and whether that attempt produced a correct, faster kernel.
struct technique_use {
  std::string technique;
  bool success = false;
};

/// One candidate the loop measured, as the learning curve counts it (learning_curve.h).
struct attempt_point {
  std::string technique;
  std::string state;               ///< the KB state of the version it was made from ("" when unknown)
  std::optional<double> speedup;   ///< over the input (input_ms / its time), when correct and timed
};

/// The stored result of one problem.
struct problem_result {
  std::string problem;   ///< KernelBench file stem, e.g. "23_Softmax"
  int level = 0;
  std::string file;      ///< the problem file, as given
  /// ok | import_failed | no_initial_kernel | input_failed | error
  std::string status = "ok";
  std::string error;     ///< why, when status is not ok
  bool valid = false;    ///< the final kernel is correct (verified by the harness)
  /// Why the problem is degenerate (engine/evaluate/reference_probe.h's summary: "degenerate: output
  /// constant over the declared inputs", or an input the output ignores): its verification proves
  /// little and its speedup means nothing, so the metrics leave it out of every aggregate. Empty:
  /// not degenerate, or not probed (replayed results).
  std::string degenerate;
  bool import_cached = false;             ///< this run's import was served from the import cache
  std::optional<double> import_seconds;   ///< the exporter's wall time, when it ran for this result
  std::optional<double> eager_ms;     ///< the exporter's eager PyTorch time
  std::optional<double> compile_ms;   ///< the exporter's torch.compile time
  std::optional<double> reference_ms; ///< the harness's time of the reference (same session as best)
  std::optional<double> input_ms;     ///< the initial CUDA kernel
  std::optional<double> best_ms;      ///< the best correct kernel
  std::int64_t tokens = 0;
  double gpu_seconds = 0, wall_seconds = 0;
  int candidates = 0, correct_candidates = 0;
  std::vector<optimize::phase_seconds> candidate_phases;  ///< where each candidate's seconds went
  /// Where the input kernel's measurement went (once per problem). Results stored before it was
  /// kept apart have none, and their input is the first of candidate_phases.
  std::optional<optimize::phase_seconds> input_phases;
  std::vector<technique_use> techniques;
  std::vector<std::string> states_visited;  ///< KB states of the versions profiled, in order
  /// Every distinct candidate after the input, in the loop's order: iteration, trajectory, step
  /// (the order a run with one job measures them in); a kernel met twice counts once, as the
  /// budgets count it. What the learning curve's attempts are.
  std::vector<attempt_point> attempts;
  std::string arch;            ///< the architecture the KB's statistics were kept under, e.g. sm_90
  std::string initial_kernel;  ///< where the initial CUDA came from: task | kernels_dir | model
  std::string stop_reason, run_id, worker;
  std::string finished_at;     ///< ISO 8601 UTC
};

/// The three speedups of the paper's table, each present only for a valid result with both times.
struct speedups {
  std::optional<double> eager, compile, best_baseline;
};

/// Speedups of `r`'s best kernel. Over eager: reference_ms / best_ms when the harness timed the
/// reference (same timer, same session), else eager_ms / best_ms. Over torch.compile: compile_ms
/// brought onto the harness's clock by the exporter's own ratio (compile_ms / eager_ms x
/// reference_ms) when all are known, else compile_ms / best_ms. Best baseline: the faster of the two.
speedups speedups_of(const problem_result& r);

nlohmann::json to_json(const problem_result& r);
/// Reads a stored result; throws std::runtime_error naming the missing or mistyped field.
problem_result problem_result_from_json(const nlohmann::json& j);

/// The store's key for a problem: "L<level>_<problem>".
std::string result_key(int level, const std::string& problem);

}  // namespace kblaster::engine::bench
