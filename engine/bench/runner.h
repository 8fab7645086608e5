// The bench driver: for each selected KernelBench problem (this shard's share), import it, find
// its initial CUDA kernel, run the optimization loop, and store the result; a problem that fails
// is recorded with its status and never stops the run; a problem already stored is skipped, so
// re-running the same command resumes. Each imported problem's reference is probed in the harness
// first: a degenerate one is marked. The loop, the import, the probe and the model's initial kernel
// are passed in as functions, so tests and replays can stand in for the GPU.
#pragma once

#include "engine/bench/bench_kb.h"
#include "engine/bench/problem_set.h"
#include "engine/bench/result_store.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/kernelbench_import.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/service.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// What to run.
struct bench_options {
  std::filesystem::path kernelbench_dir;
  std::vector<int> levels{1};
  std::string selection;              ///< --problems; empty: all
  std::filesystem::path out;          ///< the run directory (result store)
  /// The shared KB: a file, or a server's postgresql:// URI; empty: OUT/kb.sqlite. Private KBs
  /// (below) go beside it: files in OUT, or databases on the same server (bench_kb.h).
  std::filesystem::path kb;
  /// A KB learnt elsewhere for a new KB: a .sqlite file or a server's KB copied, an exported
  /// .json imported (into a server's shared KB, whatever it is, imported: bench_kb.h).
  std::filesystem::path warm_start;
  bool empty_kb = false;              ///< ablation: each problem starts from an empty, unseeded KB of its own
  /// Each problem starts from its own copy of the run's KB (OUT/kb.sqlite, made from --warm-start
  /// or the seed), which itself never changes: every problem sees the same KB, as the learning
  /// curve's held-out runs need (learning_run.h). With a server's `kb`, the run's KB and the
  /// problems' copies are private databases beside it, dropped once done with (their exports kept
  /// in OUT/kb.json and WORK/kb.json); the server's own KB is left as it is.
  bool kb_per_problem = false;
  /// With kb_per_problem: the run's KB starts blank, the seed's states and techniques without
  /// anything learnt (every prior 1.0, no notes): the learning curve's cold arm, the paper's
  /// empty KB, which still knows what the states and techniques are called.
  bool blank_kb = false;
  std::filesystem::path tasks_dir;    ///< imported tasks, shared by several runs; empty: OUT/tasks
  std::filesystem::path kernels_dir;  ///< initial kernels: DIR/levelN/NAME.cu or DIR/NAME.cu
  int shard_index = 0, shard_count = 1;
  std::string worker = "local";       ///< recorded in each result: which worker ran it
  optimize::loop_options loop;
  std::string import_device = "cuda"; ///< where the exporter runs and times the reference
  double timing_seconds = 1;          ///< exporter timing per side; 0: none
  std::string python = "python3";
  /// Where imports are kept for later runs (kernelbench_import_options::cache_dir); empty: none.
  std::filesystem::path import_cache;
  bool retry_failed = false;          ///< re-run stored problems whose status is not ok
  nlohmann::json manifest_extra = nlohmann::json::object();  ///< gpu, model, evaluator, ... for the manifest
};

/// The stand-ins for the GPU-bound steps.
struct bench_hooks {
  /// Runs the loop on a task (input kernel, KB and out_dir in `env`).
  std::function<optimize::optimize_result(const task_spec&, const optimize::loop_options&, optimize::run_environment&)>
      optimize = optimize::run_optimization;
  /// Imports a problem (default: import_kernelbench).
  std::function<kernelbench_import_result(const kernelbench_import_options&)> import;
  /// The model writes the initial CUDA kernel from the PyTorch source; empty or nullopt: none.
  std::function<std::optional<std::string>(const problem_ref&, const task_spec&, const std::string& pytorch_source)>
      initial_kernel;
  /// Probes the problem's reference, once imported, for a constant output or an ignored input
  /// (reference_probe.h): such a problem is marked degenerate and left out of the aggregates. Empty,
  /// or nullopt back (replayed results, no harness): not probed.
  std::function<std::optional<reference_probe>(const task_spec&)> probe;
  /// Fills in a result after the loop (e.g. recorded baseline times); may be empty.
  std::function<void(problem_result&)> amend;
  std::function<void(const std::string&)> log;  ///< one line per event; may be empty
  std::stop_token stop;
};

/// The hooks of a bench whose problems run over the optimize service: each problem's loop in
/// `session` (its evaluators, one warm harness, and its model), each reference probed by the
/// session's harness; `stop` ends both. The import and the rest stay as bench_hooks has them.
bench_hooks session_hooks(optimize::optimize_session& session, std::stop_token stop);

/// What a bench call did.
struct bench_summary {
  int selected = 0, ran = 0, skipped = 0, failed = 0;
  int waiting = 0;  ///< problems waiting for a deferred model's answers (not stored: the same command resumes them)
};

/// The hyperparameters as stored in the manifest (and compared on resume).
nlohmann::json hyperparameters_json(const bench_options& o);

/// Makes the shared KB from --warm-start when it holds none yet (what run_bench does first), so
/// that the workers of one run (run_workers) find it made instead of each making it. Nothing with
/// --empty-kb or a KB per problem. Throws store_error, kb::kb_error.
void prepare_shared_kb(const bench_options& options);

/// Runs this shard. Throws problem_set_error / store_error for an unusable checkout, selection
/// or run directory (before any problem runs); never for one problem's failure.
bench_summary run_bench(const bench_options& options, const bench_hooks& hooks);

}  // namespace kblaster::engine::bench
