// "Analyse this file" for editors: compile a CUDA source (errors, warnings, ptxas resources,
// occupancy, static state), and where the machine has a GPU, ncu and a task for the file,
// profile it live. Debounced per file (a newer request stops the older one), cached by content
// hash, with what the machine can do detected once. Knows nothing of LSP: the daemon calls it
// with a path and a text and renders the result.
#pragma once

#include "engine/capture/program_capture.h"
#include "engine/state/profile_pipeline.h"
#include "engine/task/task.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// What this machine offers for analysis.
struct analysis_capabilities {
  std::optional<std::string> nvcc;  ///< path, when found
  std::string gpu_arch;             ///< e.g. sm_90; empty without a GPU
  std::optional<std::string> ncu;   ///< path, when found

  /// True when live profiling can run here (a GPU and ncu).
  bool can_profile_live() const { return !gpu_arch.empty() && ncu.has_value(); }
  /// One sentence saying what is missing and what still works; empty when nothing is missing.
  std::string missing() const;
};

/// Looks for nvcc, a GPU (nvidia-smi) and ncu (`ncu_override` first when non-empty). Slow
/// (runs nvidia-smi): call once.
analysis_capabilities detect_capabilities(const std::string& ncu_override = "");

/// How to analyse.
struct file_analysis_options {
  std::string arch;                        ///< nvcc target; empty: the GPU's, else sm_90
  std::vector<std::string> nvcc_flags;
  bool profile_live = true;                ///< profile on a GPU when a task (or main) allows
  /// Why the caller forbids running the file's code (the daemon's: an untrusted workspace);
  /// non-empty means no live profile, with this as the reason. Compiling still happens.
  std::string live_refusal;
  std::chrono::milliseconds debounce{250}; ///< wait for more saves before starting
  int assumed_block_size = 256;            ///< static occupancy is computed for this block size
  /// How a program (a file with main() and no task) runs. Set, each of its kernels is profiled
  /// from a capture of its launch, replayed alone under ncu (engine/capture/capture_profile.h);
  /// unset, or without the harness, the whole program runs under ncu. The source and the kernel
  /// are filled in per kernel.
  std::optional<capture_request> program_capture;
  /// kblaster-harness, which replays those launches; empty: found beside kblaster.
  std::string harness;
  /// Hears the live profile's steps ("building", "running … and capturing …", "profiling …");
  /// not part of the result, so not of the cache key.
  std::function<void(const std::string&)> progress;

  /// Part of the cache key: options that change the result.
  std::string key() const;
};

/// The task of a source file, if it has one: an embedded `/* kblaster-task` spec, a sibling
/// NAME.task.json, or a task.json in its directory whose kernel is this file.
struct task_lookup {
  std::optional<task_spec> task;
  std::string error;  ///< a task file exists but cannot be used (names file and field)
  std::string where;  ///< the spec's file ("" when embedded or absent)
  /// The kernels the task is for: those the file's kb_forward launches (short names). Empty when
  /// the file has no kb_forward that launches one of its kernels: the task is then the whole file's.
  std::vector<std::string> kernels;
  /// Whether the task is for `kernel` (every kernel when its kernels are not known).
  bool is_for(const std::string& kernel) const;
};
task_lookup find_task_for(const std::string& cu_path, const std::string& text);

/// Live profiling of a saved file: (path on disk, its task or none, options, stop) → profile.
/// The default runs `profile_live` for a self-contained program (a file with main()); a task
/// kernel needs the harness, which the caller supplies.
using live_profiler = std::function<profile_outcome(const std::string& path, const std::optional<task_spec>& task,
                                                    const file_analysis_options& options, std::stop_token stop)>;

/// Why an analysis made no live profile, for callers that act on the reason rather than show it.
enum class live_skip {
  none,              ///< a live profile was made
  off,               ///< profile_live is false (the profileOnSave setting)
  no_gpu,            ///< this machine has no GPU
  no_ncu,            ///< Nsight Compute was not found
  refused,           ///< the caller's live_refusal (an untrusted workspace)
  does_not_compile,
  no_task,           ///< no task, and the file is not a program
  not_saved,         ///< the file is not on disk
  needs_harness,     ///< a task kernel, and no live profiler that can run one
};

/// The outcome of analysing one version of one file. Immutable once published.
struct file_analysis {
  std::string path;            ///< the file as the caller named it
  std::string content_hash;    ///< of the analysed text
  profile_outcome static_profile;
  std::optional<profile_outcome> live_profile;
  task_lookup task;
  std::string live_skipped;    ///< why no live profile was made (empty when one was)
  bool live_refused = false;   ///< live_skipped is the caller's live_refusal: it alone stood in the way
  live_skip skipped = live_skip::none;  ///< live_skipped's reason, typed
  std::string analysed_at;     ///< ISO 8601 UTC
  double seconds = 0;          ///< wall time of the analysis

  /// The view of kernel `function` (short name): the live one when profiled, else the static
  /// one; nullptr when the analysis does not know it.
  const kernel_view* kernel(const std::string& function) const;
  /// Every compiler diagnostic (static build, then the live build's that differ).
  const std::vector<diagnostic>& diagnostics() const { return static_profile.diagnostics; }
};

/// FNV-1a 64 of `text`, 16 hex digits.
std::string content_hash(const std::string& text);

/// The service. Thread-safe: calls for different files run in parallel; for one file, a newer
/// call makes the older one return nullptr at its next step.
class file_analyzer {
 public:
  /// `caps` is computed on first use when not given; `live` overrides the default live profiler.
  explicit file_analyzer(std::optional<analysis_capabilities> caps = std::nullopt, live_profiler live = {});

  /// Analyses `text` as the content of `path` (which may not exist on disk: the text is what is
  /// compiled, with the file's directory on the include path). Returns nullptr when superseded
  /// or stopped; a cached result for the same text and options returns at once.
  /// With a `ticket` from reserve(), it returns nullptr at once when a newer one was reserved.
  std::shared_ptr<const file_analysis> analyze(const std::string& path, const std::string& text,
                                               const file_analysis_options& options, std::stop_token stop,
                                               std::optional<std::uint64_t> ticket = std::nullopt);
  /// Takes the next place in `path`'s order where requests still arrive in order (the server's
  /// message strand), before the work moves to a thread pool that may run it late: an older
  /// ticket's analysis never replaces a newer one's.
  std::uint64_t reserve(const std::string& path);

  /// True while an analysis of `path` is reserved and not started yet, or running (a file just
  /// opened: its first analysis is under way).
  bool pending(const std::string& path) const;
  /// The latest finished analysis of `path`, or nullptr.
  std::shared_ptr<const file_analysis> latest(const std::string& path) const;
  /// Stops a running analysis of `path` and forgets its latest result.
  void forget(const std::string& path);
  /// Detected once, on first call.
  const analysis_capabilities& capabilities();

 private:
  struct slot;
  bool superseded(const std::string& path, std::uint64_t generation) const;

  live_profiler live_;
  std::once_flag caps_once_;
  analysis_capabilities caps_;
  bool caps_given_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> generation_;               // by path
  std::map<std::string, std::stop_source> running_;                // by path
  std::set<std::string> queued_;                                   // reserved, not started yet
  std::map<std::string, std::shared_ptr<const file_analysis>> latest_;  // by path
  std::map<std::string, std::shared_ptr<const file_analysis>> cache_;   // by path|hash|options
  std::vector<std::string> cache_order_;                          // oldest first
};

}  // namespace kblaster::engine
