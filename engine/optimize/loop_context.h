// What every trajectory of a run shares: the task, options and environment, the checkpoint, the
// evaluation cache, the run's accounting against its budgets, the stop flag and progress. All
// members that change during a run are guarded; trajectories run on several threads.
#pragma once

#include "engine/optimize/optimize.h"
#include "engine/optimize/run_journal.h"
#include "engine/optimize/step_record.h"

#include "kb/knowledge_base.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>

namespace kblaster::engine::optimize {

/// A candidate must beat the version it started from by this much to replace it (and a step's
/// best the run's best to be a new best): below that, timing noise would have the trajectory
/// chase its own tail.
inline constexpr double min_gain = 1.01;

/// A kernel version: its source and its (cached) evaluation.
/// Thrown by loop_context::evaluate when the caller's stop abandoned the evaluation in flight:
/// the step it belongs to is dropped whole (a resumed run redoes it), nothing is recorded.
class evaluation_cancelled : public std::runtime_error {
 public:
  evaluation_cancelled() : std::runtime_error("cancelled") {}
};

struct version {
  std::string hash;
  std::string source;
  evaluation eval;
  double ms() const { return eval.runtime_ms.value_or(0); }
};

/// A version's KB state.
struct state_of_version {
  std::string name;    ///< "unknown" when there is no profile or no KB state at all
  double score = 0;
  bool exact = false;
};

/// Shared state of one run.
class loop_context {
 public:
  loop_context(const task_spec& task, const loop_options& options, run_environment& env, run_journal& journal,
               std::string run_id);

  const task_spec& task;
  const loop_options& options;
  run_environment& env;
  run_journal& journal;
  const std::string run_id;
  std::string arch;  ///< the KB statistics key (sm_90), set once the baseline is measured
  /// The reference's median timed with the input, set once the baseline is measured: every later
  /// candidate is set against its own version's median, so the reference is not timed again for it
  /// (evaluation_request::reference_ms).
  std::optional<double> reference_ms;

  /// Evaluates `source` (verify, then time when correct; no profile, unless profile_all), once per
  /// hash per run: later calls, and resumed runs, are served from the cache and the checkpoint,
  /// without the profile the version may have been given since (cached() has it). A caller's
  /// stop abandons the evaluation in flight and throws evaluation_cancelled. `beat_ms`: the
  /// median of the version the candidate is set against (evaluation_request::beat_ms), whose
  /// clearly slower candidates stop timing early.
  version evaluate(const std::string& source, std::optional<double> beat_ms = std::nullopt);
  /// `v` with its profile, the evidence its KB state is read from: taken now when `v` is correct
  /// and has none (only the profile runs; its seconds join the evaluation's). The loop profiles
  /// only what it needs a state of: the input (with the editor's sections, which a save's profile
  /// of the same kernel serves) and each version a step starts from (`scope` state_counters: the
  /// state alone, in a third of ncu's replay passes). Throws evaluation_cancelled like evaluate().
  version with_state(const version& v, profile_scope scope = profile_scope::sections);
  /// Has the evaluator build `sources` in the background (the next candidates, while the GPU
  /// verifies the first).
  void prepare(const std::vector<std::string>& sources);
  /// The cached version with `hash`, if evaluated in this run, with the profile it was given since.
  std::optional<version> cached(const std::string& hash) const;
  /// Adds a journaled evaluation to the cache (resume) without counting it again.
  void remember(const std::string& source, const evaluation& e);

  /// True once cancelled by the caller or stopped by a budget or an error.
  bool stopped() const;
  /// Stops the run with `reason` (the first reason wins).
  void stop(stop_kind reason);
  /// Why the run stopped: the first reason given, else cancelled by the caller, else finished.
  stop_kind stop_reason() const;
  /// The first budget reached, if any; stops the run when one is.
  std::optional<stop_kind> check_budgets();

  /// Adds a finished step's figures (live or from the checkpoint) to the run's totals.
  void account(int candidates, double gpu_seconds, std::int64_t tokens);
  int candidates() const;
  double gpu_seconds() const;
  std::int64_t tokens() const;
  double wall_seconds() const;

  /// Progress: a step began trying `what` (counts nothing done yet; a step may take a while,
  /// and the user sees what it is doing rather than the previous message).
  void step_started(int iteration, int trajectory, int step, const std::string& what);
  /// Progress: a step's new best goes under ncu for the state the next step chooses by (seconds
  /// of the GPU's in which nothing else would be said).
  void step_profiling(int iteration, int trajectory, int step, double speedup);
  /// Progress: a step finished (or was skipped), with the best speedup known.
  void step_done(int iteration, int trajectory, int step, int count, const std::string& message);
  void set_best_speedup(double s);
  void emit(progress_event e);
  int steps_total() const { return options.iterations * options.breadth * options.depth; }

  /// The hash of the version the current iteration started from (set before its trajectories
  /// run): the ucb policy is deterministic, so trajectory b of an iteration takes its b-th
  /// choice from that shared version rather than all of them the same one (run_step).
  std::string iteration_start_hash;

  /// A trajectory stopped to wait for a deferred model's answer (its step is redone on resume).
  void note_waiting() { waiting_.fetch_add(1); }
  int waiting() const { return waiting_.load(); }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, version> cache_;
  std::set<std::string> in_flight_;
  std::set<std::string> profiling_;  // versions whose profile a trajectory is taking (with_state)
  std::condition_variable evaluated_;  // a candidate in flight was measured (or failed)
  std::stop_source internal_;
  std::optional<stop_kind> stop_reason_;
  int candidates_ = 0, steps_done_ = 0;
  double gpu_seconds_ = 0, best_speedup_ = 1;
  std::int64_t tokens_ = 0;
  std::atomic<int> waiting_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

/// What the KB is told about a version's profile; nullopt without one.
std::optional<kb::kernel_evidence> evidence_of(const evaluation& e);

/// The KB state of a version (deterministic classifier + KB match; a discovered state is
/// adopted into the KB).
state_of_version state_of(kb::knowledge_base& kb, const evaluation& e, const std::string& arch);

/// What the agents read about a version: the profile summary, or only cycles (an ablation).
std::string prompt_summary(const evaluation& e, bool cycles_only);

/// "iteration 1/2, trajectory 1/2, step 1/2": where step (k, b, t) sits in the run.
std::string step_position(const loop_options& o, int iteration, int trajectory, int step);

/// A 64-bit mix of the run seed and a step's coordinates (selection seeds).
std::uint64_t step_seed(std::uint64_t seed, int iteration, int trajectory, int step, std::uint64_t salt = 0);

/// "run/i0/t3": the KB trajectory name of trajectory b of iteration k.
std::string trajectory_name(const std::string& run_id, int iteration, int trajectory);

/// Runs step (k, b, t) from `start`: choose a technique, apply it (mechanical tier or the
/// lowering agent), evaluate. Returns the step's journal record; `result` is the hash of the
/// version the trajectory continues from, `end` is true when nothing applies any more.
step_record run_step(loop_context& ctx, kb::knowledge_base& kb, const version& start, int iteration, int trajectory,
                     int step, const std::set<std::string>& tried);

}  // namespace kblaster::engine::optimize
