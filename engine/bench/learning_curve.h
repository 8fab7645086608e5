// The learning curve's bookkeeping (issue 38; the paper's Fig. 15-16): what a KB learnt on one
// set of tasks is worth, in attempts, on tasks it has not seen. Each held-out task is run from
// several starting KBs (arms: "cold" is a blank KB, the paper's empty one; "seed" the shipped seed
// KB alone; "warm" the KB learnt on the training
// set, "foreign" that KB imported under another architecture's label) with the same seeds and
// budgets; here, from the attempts each run made (problem_result::attempts), are counted:
//  - the task's target: 90 % of the best speedup over the input that any run of it found (any
//    arm, any seed); a task whose target the input itself reaches (best under 1/0.9) tells
//    nothing about the search and is left out of the aggregates;
//  - per run, the attempts needed to reach the target: the 1-based index of the first attempt
//    at or above it among the first `budget`; a run that never does counts as budget + 1, a lower
//    bound, and is said to be unreached;
//  - per arm, the mean and median of those counts and the best-speedup-per-attempt curve (the
//    geometric mean over its runs of the best speedup after n attempts);
//  - the ratio warm / cold of the mean attempts (the goal: at most 0.5);
//  - per arm, the start KB's state coverage: of the states the held-out runs' steps started in,
//    those the KB held statistics for, and the share of attempts made from them.
// Pure functions: the runs come from stored results (learning_run.h), or from a test.
#pragma once

#include "engine/bench/problem_result.h"
#include "engine/bench/problem_set.h"
#include "kb/types.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// The share of a task's best speedup a run must reach.
inline constexpr double reach_fraction = 0.9;

/// One run of a held-out task.
struct held_out_run {
  std::string task;  ///< its result key, e.g. L1_20_LeakyReLU
  std::string arm;   ///< the KB it started from: cold | seed | warm | foreign
  std::uint64_t seed = 0;
  std::vector<attempt_point> attempts;
};

/// A run's candidates as attempts (problem_result::attempts), from its KB attempts: in the loop's
/// order (iteration, trajectory, step; the KB's ids keep the order within a step), each kernel
/// (code hash) once, with its speedup over the input when it was correct and timed.
std::vector<attempt_point> attempts_in_loop_order(std::vector<kb::attempt> mine, std::optional<double> input_ms);

/// The attempts needed to reach `target`: 0 when the input (speedup 1) reaches it, else the
/// 1-based index of the first attempt at or above it among the first `budget` (0: all of them);
/// nullopt when none does.
std::optional<int> attempts_to_reach(const std::vector<attempt_point>& attempts, double target, int budget);

/// The best speedup over the input after n = 0..length attempts (length + 1 values): [0] is the
/// input's 1, and a run that stopped earlier keeps its best to the end.
std::vector<double> best_so_far(const std::vector<attempt_point>& attempts, int length);

/// Throws problem_set_error naming the problems both sets hold (same level and name).
void require_disjoint(const std::vector<problem_ref>& train, const std::vector<problem_ref>& test);

/// One run as counted.
struct run_count {
  std::string arm;
  std::uint64_t seed = 0;
  int attempts = 0;                ///< made, within the budget
  double best = 1;                 ///< its best speedup within the budget
  std::optional<int> to_target;    ///< attempts to reach the task's target; nullopt: not reached
  int counted = 0;                 ///< to_target, or budget + 1 when unreached
};

/// One held-out task.
struct task_learning {
  std::string task;
  double best = 1;            ///< the best speedup any of its runs found
  double target = reach_fraction;
  bool informative = false;   ///< target > 1: the input alone does not reach it
  bool complete = false;      ///< every arm ran it with every seed
  std::vector<run_count> runs;  ///< by arm (in the experiment's order), then seed
  /// Per arm: the geometric mean over its seeds of the best speedup after n = 0..budget attempts.
  std::map<std::string, std::vector<double>> curves;
};

/// One arm over the informative, complete tasks.
struct arm_learning {
  std::string arm;
  int runs = 0, reached = 0;
  double mean_attempts = 0, median_attempts = 0;  ///< unreached runs counted as budget + 1
  std::vector<double> curve;  ///< geometric mean best speedup after n = 0..budget attempts
};

/// The start KB's state coverage for one arm's held-out runs.
struct state_coverage {
  int kb_states = 0;                 ///< states the start KB holds statistics for
  std::vector<std::string> visited;  ///< states the runs' steps started in (distinct, sorted)
  std::vector<std::string> covered;  ///< those the start KB holds statistics for
  int attempts = 0, attempts_covered = 0;  ///< attempts, and those made from a covered state
};

/// Everything the learning report shows.
struct learning_summary {
  int budget = 0;                    ///< attempts per run counted (the shortest budget of any arm)
  std::vector<std::string> arms;     ///< in the experiment's order
  std::vector<std::uint64_t> seeds;
  std::vector<task_learning> tasks;  ///< by task key
  std::vector<arm_learning> arm_totals;
  std::map<std::string, state_coverage> coverage;
  std::optional<double> warm_over_cold;  ///< mean attempts, warm / cold; the goal is at most 0.5
  std::optional<double> seed_over_cold;  ///< mean attempts, seed / cold; the seed KB should never be worse (<= 1)
};

/// Counts `runs`. `budget` > 0 cuts every run to its first `budget` attempts; 0 takes the
/// longest run's length. `kb_states[arm]`: the states the arm's start KB holds statistics for
/// (absent: no coverage for that arm). `arms` and `seeds`: the experiment's, which a complete task
/// has a run of each; empty: those of `runs` (arms in order of first appearance).
learning_summary summarize_learning(const std::vector<held_out_run>& runs, int budget,
                                    const std::map<std::string, std::set<std::string>>& kb_states,
                                    const std::vector<std::string>& arms = {},
                                    const std::vector<std::uint64_t>& seeds = {});

nlohmann::json to_json(const learning_summary& s);

// --- what a KB export (kb::knowledge_base::export_json) holds, for the arms' start KBs ---

/// The states for which the export holds statistics that a run on `arch` uses: the
/// architecture's own (by_arch) or, where it has none, the pooled ones (what
/// kb::knowledge_base::optimizations falls back to).
std::set<std::string> states_with_statistics(const nlohmann::json& kb_export, const std::string& arch);

/// Statistics rows with attempts, per architecture ("all": the pooled rows).
struct arch_rows {
  int rows = 0;               ///< (state, technique) pairs with attempts
  std::int64_t attempts = 0;  ///< their attempts
};
std::map<std::string, arch_rows> statistics_by_arch(const nlohmann::json& kb_export);

/// The export with every architecture's own statistics (and lessons) moved under `label`, the
/// pooled ones kept: a KB as learnt on another architecture. Throws std::invalid_argument when
/// it holds statistics of more than one architecture.
nlohmann::json relabel_architecture(nlohmann::json kb_export, const std::string& label);

}  // namespace kblaster::engine::bench
