// The live evaluator: writes a candidate to a content-addressed work directory, builds it (nvcc
// for .cu on a GPU; the host compiler for .cpp on the CPU path), sends `evaluate` to a
// kblaster-harness child (verify on the task's seeds, then time against the reference) and,
// when the candidate is correct, profiles it: under Nsight Compute on a GPU (a `profile` request:
// the same harness starts a runner under ncu, filtered to the NVTX range kb_candidate), else
// statically (ptxas + occupancy). One harness per GPU, each used by one evaluation at a time.
#pragma once

#include "engine/evaluate/evaluator.h"
#include "engine/profile/ncu_runner.h"
#include "support/device_lock.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/task.h"
#include "engine/task/timing_policy.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {
struct candidate_build;
class harness_client;
struct harness_reply;
class nvcc_driver;
class state_namer;
}  // namespace kblaster::engine

namespace kblaster::engine::optimize {

/// How the live evaluator runs candidates.
struct harness_evaluator_options {
  std::string device = "auto";      ///< cpu (candidates are host C++ .cpp) | cuda (.cu) | auto: cuda when a GPU is visible
  std::vector<int> gpus;            ///< indices among the visible GPUs; empty: all of them (cuda only)
  std::string harness;              ///< kblaster-harness; empty: find_harness()
  std::filesystem::path work_dir;   ///< sources, builds, ncu reports; empty: $XDG_CACHE_HOME/kblaster/evaluations
  std::chrono::milliseconds watchdog{10'000};  ///< a request's own work, beyond the timing budget
  double max_seconds = timing_policy{}.max_seconds;  ///< timing cap per side (candidate, reference)
  const state_namer* matcher = nullptr;  ///< names profiled states; null: the signature namer
  std::string ncu;                  ///< ncu path; empty: find_ncu(); "none": never (static profiles)
  std::chrono::seconds profile_timeout{300};  ///< one ncu run
  bool profile_full_shape = false;  ///< never profile a slow task at a smaller batch (profile_shape.h)
  /// A request on which the judge itself failed (harness_reply::judge_failed) is sent again to a
  /// fresh harness this many times at most, then evaluate() throws evaluation_error.
  int judge_retries = 2;
  /// Where ncu's pages of profiled kernels are kept for the next profile of the same kernel, task,
  /// GPU and ncu (profile_cache.h); empty: profile_cache::default_dir(). "none": profile every time.
  std::filesystem::path profile_cache_dir;
  /// One request at a time per GPU across every kblaster process of this user (support/device_lock.h):
  /// a profile on save and an Optimize, or two runs, never time or profile on one GPU at once.
  /// The CPU path is not locked (its figures promise nothing, and CI runs many at once).
  bool lock_device = true;
  std::filesystem::path device_lock_dir;  ///< empty: user_runtime_dir()/devices
  /// Told once per wait, when a GPU is held by another measurement: "GPU 0 is busy (pid 4242:
  /// profile of a candidate of 'transpose'): waiting for it". Empty: said on stderr.
  std::function<void(const std::string&)> on_device_wait;
};

/// The snapshot of an ncu run's pages (details, raw, source CSV): every kernel classified, the
/// one with the longest duration kept, with its elapsed cycles. nullopt with `error` set when
/// the pages hold nothing usable. What the live evaluator does with a profile's report.
std::optional<profile_snapshot> snapshot_from_ncu_pages(const std::string& details_csv, const std::string& raw_csv,
                                                        const std::string& source_csv, const state_namer* matcher,
                                                        std::string& error);

/// What ncu is asked for when a profile of `scope` is: the loop's sections, or the state's counters
/// alone (no section); filtered to the runner's NVTX range. The report path and timeout are the caller's.
ncu_options profile_ncu_options(profile_scope scope);

/// The live evaluator over kblaster-harness. Thread-safe; evaluations of distinct candidates
/// run in parallel up to parallelism() (one per GPU), and the same (source, request) is
/// measured once per evaluator: later calls get the first result (concurrent ones wait for it).
/// A failure of the machinery rather than the candidate (a harness that does not start or dies,
/// harness_reply::judge_failed) is retried on a fresh harness, then thrown as evaluation_error:
/// never a verdict, never kept.
/// An evaluation's gpu_seconds is the wall time the device was held for it: its harness request,
/// its ncu run, and the harness's start when this candidate started it; build_seconds that of
/// the compiler; phases divides both. prepare() builds ahead on the CPU, one thread per
/// candidate, so a step's variants are built while the GPU verifies the first.
class harness_evaluator final : public evaluator {
 public:
  /// Knows `tasks` by name (more with add_task). Throws evaluation_error when candidates cannot
  /// be evaluated here at all: no harness, no nvcc for cuda, no GPU for cuda, a GPU index out of
  /// range, or a reference kernel that does not build.
  harness_evaluator(std::vector<task_spec> tasks, harness_evaluator_options options = {});
  ~harness_evaluator() override;
  harness_evaluator(const harness_evaluator&) = delete;
  harness_evaluator& operator=(const harness_evaluator&) = delete;

  /// Adds (or replaces) a task; builds its reference kernel when it has one, which `stop` kills.
  /// Throws evaluation_error (a reference that does not build, or a build stopped).
  void add_task(const task_spec& task, std::stop_token stop);
  /// Throws evaluation_error for an unknown task or a harness that cannot start.
  evaluation evaluate(const std::string& task_name, const std::string& source,
                      const evaluation_request& request) override;
  void prepare(const std::string& task_name, const std::string& source) override;
  /// The task's reference probed for degeneracy (reference_probe.h) on one of this evaluator's
  /// harnesses. Throws evaluation_error for an unknown task; a harness that fails gives a probe
  /// with its error.
  reference_probe probe_reference(const std::string& task_name, std::stop_token stop);
  /// "live: kblaster-harness on 2 x NVIDIA H100 80GB HBM3 (sm_90)" or "live: kblaster-harness on the CPU".
  std::string describe() const override;
  int parallelism() const override { return static_cast<int>(slots_.size()); }
  /// "cpu" or "cuda": what candidates must be (host C++ or CUDA).
  const std::string& device() const { return device_; }
  /// Harness processes started so far, over every GPU (restarts after crashes included). Exact
  /// only while no evaluation runs.
  int harness_starts() const;

 private:
  struct task_entry {
    task_spec spec;
    std::string reference_library;  // built reference kernel, when the reference is one
  };
  struct slot {
    std::string visible;  // CUDA_VISIBLE_DEVICES for this GPU's harness (empty: inherit / CPU)
    std::unique_ptr<harness_client> client;
    std::string device_name;
  };
  class lease;

  harness_evaluator_options options_;
  std::string device_;
  std::string harness_;
  std::string ncu_;
  std::filesystem::path work_dir_;
  std::unique_ptr<nvcc_driver> nvcc_;
  std::string arch_;

  mutable std::mutex tasks_mutex_;
  std::map<std::string, std::shared_ptr<const task_entry>> tasks_;

  std::vector<std::unique_ptr<slot>> slots_;
  mutable std::mutex pool_mutex_;
  std::condition_variable pool_cv_;
  std::vector<slot*> free_;

  std::mutex cache_mutex_;
  std::map<std::string, std::shared_future<evaluation>> cache_;  // "hash|time|profile"

  struct timed_build;
  /// The candidate's build: the one prepare() started, else one made now. Never throws.
  std::shared_future<timed_build> build_of(const task_entry& task, const std::string& source, const std::string& hash);
  /// The whole evaluation; or, given `prior` (the same candidate verified and timed, without
  /// its profile), only the profile added to it.
  evaluation measure(const task_entry& task, const std::string& source, const std::string& hash,
                     const evaluation_request& request, std::shared_future<evaluation> prior);
  /// Waits for the candidate's build. A stop meanwhile stops every build of this evaluator (its
  /// compilers killed) and gives false; true when the build came back on its own.
  bool await_build(const std::shared_future<timed_build>& pending, std::stop_token stop);
  /// The judge's verdict on the built candidate `b` (verified, and timed when asked) read into `e`.
  void verify_and_time(const task_entry& task, const candidate_build& b, const evaluation_request& request, slot& s,
                       evaluation& e);
  /// The slot's GPU held for one request (`held`: go ahead; false only when `stop` came while
  /// waiting). Nothing is held on the CPU path or with lock_device off.
  struct device_hold {
    bool held = true;
    double waited = 0;
    std::unique_ptr<support::device_lock> lock;
  };
  device_hold lock_device(const slot& s, const nlohmann::json& request, std::stop_token stop) const;
  /// The slot's harness started when none runs: its ping's reply (a failure when it did not start;
  /// "cancelled" when `stop` came first or while it started, and then nothing is left running).
  harness_reply start_if_needed(slot& s, std::stop_token stop);
  /// `request` to the slot's harness, started first when needed; `took` gets the request's own
  /// seconds. A failed judge is retried (options_.judge_retries) on a fresh harness, the failed
  /// tries' seconds counted as harness_start; then evaluation_error. Any other reply is returned.
  harness_reply ask_judge(slot& s, const nlohmann::json& request, evaluation& e, std::stop_token stop, double& took);
  /// One candidate's ncu profile through the warm harness (harness_evaluator_profile.cpp).
  class ncu_profile;
  /// Wall seconds since `t0`: what a phase of an evaluation is counted in.
  static double seconds_since(std::chrono::steady_clock::time_point t0);
  void profile(const task_entry& task, const std::filesystem::path& dir, const std::string& source_path,
               const std::string& library, slot& s, evaluation& e, profile_scope scope, profile_scope next_scope,
               std::stop_token stop);
  void profile_static(const task_entry& task, const std::string& source_path, evaluation& e, const std::string& why);

  /// Stops every build still running when the evaluator goes (its futures' destructors wait for
  /// them) or a measurement waiting for one is stopped: a cancelled run must not wait for a
  /// compiler. An evaluator serves one run; after a stop it builds nothing more.
  std::stop_source builds_stop_;
  // Last, so that it goes first: a build still running in the background uses nvcc_ and the
  // work directory, and destroying its future waits for it.
  std::mutex builds_mutex_;
  std::map<std::string, std::shared_future<timed_build>> builds_;  // by source hash
};

}  // namespace kblaster::engine::optimize
