// The optimizer's view of the GPU: one call turns a candidate's source into a verdict (does it
// compile, is it correct, how fast against the task's reference, and, when correct, its
// profile). Implementations: the live harness (nvcc + kblaster-harness + ncu), a recorder that
// saves what the live one measured, and a replayer that serves those recordings where no GPU
// is present (CI, laptops). The loop never knows which one it has.
#pragma once

#include "kb/evidence.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// What the optimizer keeps of a kernel's profile: enough to match a KB state, to prompt the
/// agents and to report, and small enough to record (a raw ncu page is ~500 KB).
struct profile_snapshot {
  std::string kernel;                  ///< the profiled kernel (the one with most time)
  std::string primary;                 ///< primary bottleneck, from the deterministic classifier
  std::vector<std::string> secondary;  ///< secondary characteristics
  std::string summary;                 ///< summarize_for_prompt(): what the agents read
  nlohmann::json view = nlohmann::json::object();  ///< to_json(kernel_view): evidence, SOL, findings
  std::optional<std::int64_t> elapsed_cycles;
  /// ncu (live on a GPU, the editor's sections and ncu's rules) | ncu_counters (live, the state's
  /// counters alone: profile_scope::state_counters) | static (ptxas + occupancy)
  std::string source = "ncu";
  std::string report_path;             ///< the kept .ncu-rep, its pages beside it (ncu_pages_beside); empty: none
  std::string shape_note;              ///< profiled at another shape than the task's, and why (profile_shape.h); empty: its own
  kb::kernel_evidence evidence;        ///< weighed characteristics and facts: what the KB matches
};

/// Where one candidate's seconds went, each phase's wall clock. The loop's cost per candidate is
/// read from here: `kblaster optimize` and `bench` print the median of each phase.
struct phase_seconds {
  double build = 0;          ///< the compiler (CPU), whether waited for or done ahead (prepare)
  double build_wait = 0;     ///< what the evaluation waited for its build: less than build when prepared ahead
  double harness_start = 0;  ///< starting kblaster-harness (LibTorch, CUDA context): first candidate, or after a crash
  double reference = 0;      ///< the reference's load and first run (once per task per harness)
  double runner = 0;         ///< the candidate's runner made ready and the candidate loaded
  double verify = 0;         ///< the checked calls on every seed and stress set
  double time = 0;           ///< the timed calls, candidate and reference
  double profile = 0;        ///< ncu's profiled run (or the static profile)
  double profile_report = 0; ///< ncu writing its report after the profiled runner exited (the GPU is free)
  double profile_export = 0; ///< ncu's report pages read back (CPU: the GPU is free by then)
  double device_wait = 0;    ///< waiting for the GPU while another kblaster measurement held it (not device time)
  /// Seconds the device was held: harness start, reference, runner, verify, time, profile.
  double device() const { return harness_start + reference + runner + verify + time + profile; }
  /// Adds another evaluation's phases (a candidate checked on more than one task).
  phase_seconds& operator+=(const phase_seconds& o) {
    build += o.build, build_wait += o.build_wait, harness_start += o.harness_start, reference += o.reference;
    runner += o.runner, verify += o.verify, time += o.time, profile += o.profile, profile_report += o.profile_report;
    profile_export += o.profile_export;
    device_wait += o.device_wait;
    return *this;
  }
};

/// The verdict on one candidate source.
struct evaluation {
  std::string code_hash;               ///< source_hash() of the candidate
  bool compile_ok = false;
  std::string compile_log;             ///< compiler output (errors and warnings) when it failed
  bool correct = false;                ///< harness verdict "pass" on every seed (also "needs_review":
                                       ///< correct, but a speedup over 10x the reference to look at)
  std::string verdict;                 ///< pass | fail | error (the harness's word)
  std::string check;                   ///< which check failed: compile, mismatch, crash, hang, ...
  std::string reason;                  ///< a sentence for the user and for the repair prompt
  std::optional<double> runtime_ms;    ///< candidate median, when timed
  std::optional<double> reference_ms;  ///< the task's reference median (PyTorch, or the original kernel), same session
  /// Timing stopped once the candidate was clearly slower than evaluation_request::beat_ms:
  /// runtime_ms is the median of those few samples, and no reference was timed.
  bool timed_until_slower = false;
  std::optional<profile_snapshot> profile;
  double gpu_seconds = 0;              ///< device time spent: verify + time + profile (+ a harness start)
  double build_seconds = 0;
  phase_seconds phases;                ///< gpu_seconds and build_seconds, by phase
  std::string gpu_name;                ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string arch;                    ///< e.g. sm_90
  std::string profile_note;            ///< why the profile is static or absent (empty: live ncu)
  bool replayed = false;               ///< served from a recording, not measured now
  nlohmann::json harness = nlohmann::json::object();  ///< the harness's raw reply
};

/// What to do with a candidate.
/// What a profile asks ncu for.
enum class profile_scope {
  /// The editor's sections: the state, ncu's guided analysis (rules and their estimates), the
  /// hover's tables. The input kernel's profile: the first selection reads it, and a save's
  /// profile of the same kernel serves it.
  sections,
  /// The counters the state is classified from (state_ncu_metrics()), no section and no rule:
  /// 13 replay passes against 36. A step's new best, whose state the next step chooses by.
  state_counters,
};

struct evaluation_request {
  bool time = true;     ///< time against the reference once correct
  /// Profile once correct. The loop asks only for the versions whose state it needs (the input,
  /// each version a step starts from); asked of a candidate already verified and timed, only the profile runs.
  bool profile = true;
  profile_scope scope = profile_scope::sections;
  /// The scope of the caller's next profile, when it knows it (the loop: the state's counters,
  /// after the input's sections). The live evaluator has the runner for that profile started
  /// under ncu as this one ends (harness/profile_runner.h). Unset: the same scope as this one.
  std::optional<profile_scope> next_scope = std::nullopt;
  /// The median the candidate must beat to matter to the loop (its version's), when there is one:
  /// timing stops once the candidate is clearly slower (its fastest sample a quarter over), and
  /// such a candidate is not timed against the reference. Its runtime is still a measured median,
  /// of fewer samples.
  std::optional<double> beat_ms = std::nullopt;
  /// The reference's median the caller already holds (the loop: its input's, timed against the
  /// reference at the run's start), when it needs no fresh one: the reference is not timed again,
  /// and the speedup's review and the reason use this figure. A captured program's reference (its
  /// original kernel) costs a timing as long as the candidate's every time.
  std::optional<double> reference_ms = std::nullopt;
  /// Abandons the evaluation in flight (the harness or ncu is killed): it comes back with
  /// check "cancelled", which is no verdict on the candidate and must not be recorded.
  std::stop_token stop = {};
};

/// True for an evaluation abandoned by a stop (see evaluation_request::stop).
inline bool cancelled(const evaluation& e) { return e.check == "cancelled"; }

/// `e` as a request without a profile would have had it: the profile, its note and its seconds
/// taken out (a recording made with a profile, a loop's candidate profiled since).
evaluation without_profile(evaluation e);

/// Evaluates candidates. Thread-safe: the loop calls it from several trajectories; an
/// implementation serialises work per GPU and uses every GPU it was given.
class evaluator {
 public:
  virtual ~evaluator() = default;
  /// Never throws for a bad candidate: compile errors, mismatches, crashes and hangs are
  /// verdicts. Throws only when evaluation itself is impossible (no harness, replay miss).
  virtual evaluation evaluate(const std::string& task_name, const std::string& source,
                              const evaluation_request& request) = 0;
  /// Starts whatever of `source`'s evaluation needs no GPU (its build) in the background, so that
  /// the CPU builds the next candidates while the GPU verifies this one. A hint: evaluate() gives
  /// the same result whether or not it was called. Never throws.
  virtual void prepare(const std::string& task_name, const std::string& source) {
    (void)task_name;
    (void)source;
  }
  /// "live: kblaster-harness on 1 x NVIDIA H100 80GB HBM3" or "replay: FILE (recorded on ...)".
  virtual std::string describe() const = 0;
  /// GPUs evaluations can run on at once (1 for a replay).
  virtual int parallelism() const { return 1; }
};

/// Thrown when an evaluator cannot evaluate at all (as opposed to a failing candidate).
class evaluation_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Stable hash of a candidate (FNV-1a 64 over the task name and the source, 16 hex digits).
std::string source_hash(const std::string& task_name, const std::string& source);

/// JSON (de)serialisation, used by the recorder, the checkpoint and the run report.
nlohmann::json to_json(const profile_snapshot& p);
profile_snapshot snapshot_from_json(const nlohmann::json& j);
nlohmann::json to_json(const evaluation& e);
nlohmann::json to_json(const phase_seconds& p);
phase_seconds phases_from_json(const nlohmann::json& j);
evaluation evaluation_from_json(const nlohmann::json& j);

}  // namespace kblaster::engine::optimize
