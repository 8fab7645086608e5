// "Optimize this kernel", the product's main use case, once for every front end: the CLI's
// `kblaster optimize` and the editor's kblaster.optimize / kblaster.applyTechnique are adapters
// that turn flags or settings into an optimize_request and the outcome into lines or an edit.
//
// Given a file and a kernel, the service decides what the file is (file_role), captures a
// program's kernel at every shape it runs with, sets up the evaluators and the model, runs (or
// resumes) the loop under one stop token, waits for a deferred model when asked, and carries a
// program's best rewrite back into the program, re-captured, before anything is written.
#pragma once

#include "engine/capture/program_capture.h"
#include "engine/capture/program_rewrite.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/run_setup.h"
#include "engine/task/task.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// Why a run was refused before it started, or failed as a whole: the front ends word it for
/// their users (an exit status, a JSON-RPC error with a button) from the kind, not the text.
enum class optimize_refusal_kind {
  not_optimizable,  ///< neither a task nor a program (file_role::why_neither)
  needs_kernel,     ///< a program, but no kernel named
  not_saved,        ///< a program whose editor buffer differs from the file that would be run
  unreadable_task,  ///< a task file exists but cannot be used
  capture_failed,   ///< the program did not build, run or launch the kernel
  no_gpu,           ///< live measurement asked for on a machine without a GPU
  no_evaluator,     ///< the evaluators cannot be set up (a recording missing, no harness)
  evaluator,        ///< the input cannot be evaluated
  model,            ///< the model is misconfigured or failed
  bad_option,       ///< options the loop cannot run with
};

class optimize_refusal : public std::runtime_error {
 public:
  optimize_refusal(optimize_refusal_kind kind, const std::string& what, std::string cause = "")
      : std::runtime_error(what), kind_(kind), cause_(std::move(cause)) {}
  optimize_refusal_kind kind() const { return kind_; }
  /// The cause alone, without what the kind says ("no API key: ..." for "the model cannot be
  /// used: no API key: ..."), for a caller that words the kind itself; else what().
  std::string cause() const { return cause_.empty() ? what() : cause_; }
  /// True for what the user can fix before running again (everything but a failure mid-run).
  bool before_start() const { return kind_ != optimize_refusal_kind::evaluator && kind_ != optimize_refusal_kind::model; }

 private:
  optimize_refusal_kind kind_;
  std::string cause_;
};

struct optimize_request {
  std::string file;                   ///< a task (folder, .json, .cu with a task) or a program's .cu
  std::string kernel;                 ///< a program: the kernel whose launch is captured
  std::optional<std::string> buffer;  ///< the editor's text of `file`, when it may differ from the disk
  std::string start_from;             ///< a task: the kernel source to start from (empty: the task's)
  capture_request program;            ///< how a program runs (run, launch, timeout); source and kernel are filled in
  loop_options loop;
  evaluator_settings evaluator;
  model_settings model;
  std::filesystem::path kb_path;      ///< empty: the user's KB
  /// The run folder. `out_dir` when set. Otherwise under `runs_base` (empty: a .kblaster/runs
  /// folder beside the task, or beside the program): keyed by the input and every option when
  /// `keyed_run_folder` (the same run again resumes; another input starts beside it), else
  /// named after the task (or PROGRAM-KERNEL).
  std::filesystem::path out_dir, runs_base;
  bool keyed_run_folder = false;
  std::string run_prefix;             ///< a keyed folder's name starts with it
  bool wait_for_model = false;        ///< a deferred model: poll for its answers and resume until the run ends
  double poll_seconds = 30;
  bool apply = false;                 ///< a program: write the rewrite over `file` once re-captured (original kept)
};

/// What the front end hears while the service works.
struct service_events {
  /// One line of what happens outside the loop (capture, which model, waiting for answers).
  std::function<void(const std::string&)> say;
  progress_callback progress;  ///< the loop's steps (from the trajectories' threads: serialise)
  /// Asked before a program's rewrite is carried back: false when the user changed the file
  /// meanwhile (nothing is carried back; the best version stays in the run folder).
  std::function<bool()> input_unchanged;
};

struct optimize_outcome {
  task_spec task;
  std::optional<capture_result> captured;  ///< a program: the capture that is the task
  std::vector<capture_result> shapes;      ///< a program's other shapes, each verified too
  optimize_result result;
  std::filesystem::path out_dir;
  bool replayed = false;                   ///< GPU results came from recordings
  std::string model_note, evaluator_note;
  std::string waiting_for;                 ///< stop_kind::waiting: where the deferred model's questions are
  /// A program whose best version differs from the input: the program with it in place,
  /// re-captured (check says whether it reproduced the verified outputs).
  std::optional<program_rewrite> rewrite;
  std::string rewrite_error;               ///< carrying back failed (a capture_error)
  std::filesystem::path applied_to;        ///< set when the rewrite was written over the user's file
  std::filesystem::path applied_backup;    ///< then: the original's copy in the run folder

  bool is_program() const { return captured.has_value(); }
  bool improved() const { return !result.best_source.empty() && result.best_source != result.input_source; }
};

/// Runs the use case. Throws optimize_refusal; a failing candidate is never an exception, and a
/// cancelled run returns with stop_kind::cancelled (the same request resumes it).
optimize_outcome optimize_file(const optimize_request& request, const service_events& events, std::stop_token stop);

/// How a deferred model's rounds go on once a round waits for its answers.
struct model_rounds {
  bool wait = false;        ///< poll for the answers and run again; false: the round's hand-over ends it
  double poll_seconds = 30;
};

/// The evaluators and the model that one or more runs share, set up once: Optimize's one run, or
/// every problem of a bench (one warm harness; one deferred model, whose questions from all the
/// problems of a round go over together). Not thread-safe: one run at a time.
class optimize_session {
 public:
  /// The evaluators first (none when `evaluator` is nullopt: outcomes served whole, a bench's
  /// recorded ones), then the model. Throws optimize_refusal: no_gpu, no_evaluator, model.
  optimize_session(const std::optional<evaluator_settings>& evaluator, const model_settings& model,
                   std::vector<task_spec> tasks);

  /// The loop on `task` with the session's evaluators and model (the task made known to them
  /// first); `env` brings the rest: input, KB, run folder, progress, stop.
  optimize_result run(const task_spec& task, const loop_options& loop, run_environment env);
  /// The task's reference probed for degeneracy (run_setup.h); nullopt without a live harness.
  std::optional<reference_probe> probe_reference(const task_spec& task, std::stop_token stop);

  /// The deferred model's rounds, the one place they are written: `round` runs (a loop, a bench)
  /// and says whether it stopped waiting for answers; then the questions are handed over
  /// (`handed_over` hears where they went) and, with `rounds.wait`, once answers arrived
  /// (`resumed` hears it) `round` runs again, resuming where it stopped. It ends at a round that
  /// does not wait, without `wait` at the first hand-over, or at the stop. A model whose
  /// answers come at once runs one round.
  void run_rounds(const model_rounds& rounds, std::stop_token stop, const std::function<bool()>& round,
                  const std::function<void(const llm::hand_over_report&)>& handed_over,
                  const std::function<void()>& resumed = {});

  /// Null without evaluators.
  evaluator_stack* evaluators() { return evaluators_.get(); }
  const model_choice& model() const { return model_; }

 private:
  std::unique_ptr<evaluator_stack> evaluators_;
  model_choice model_;
};

/// What a checked rewrite means for the user, one sentence each, in the order to show them.
std::vector<std::string> describe_rewrite(const program_rewrite& rewrite, const capture_result& captured);

}  // namespace kblaster::engine::optimize
