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
  std::string source = "ncu";          ///< ncu (live on a GPU) | static (ptxas + occupancy)
  kb::kernel_evidence evidence;        ///< weighed characteristics and facts: what the KB matches
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
  std::optional<double> reference_ms;  ///< the task's reference (PyTorch) median, same session
  std::optional<profile_snapshot> profile;
  double gpu_seconds = 0;              ///< device time spent: verify + time + profile
  double build_seconds = 0;
  std::string gpu_name;                ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string arch;                    ///< e.g. sm_90
  std::string profile_note;            ///< why the profile is static or absent (empty: live ncu)
  bool replayed = false;               ///< served from a recording, not measured now
  nlohmann::json harness = nlohmann::json::object();  ///< the harness's raw reply
};

/// What to do with a candidate.
struct evaluation_request {
  bool time = true;     ///< time against the reference once correct
  bool profile = true;  ///< profile once correct
  /// Abandons the evaluation in flight (the harness or ncu is killed): it comes back with
  /// check "cancelled", which is no verdict on the candidate and must not be recorded.
  std::stop_token stop = {};
};

/// True for an evaluation abandoned by a stop (see evaluation_request::stop).
inline bool cancelled(const evaluation& e) { return e.check == "cancelled"; }

/// Evaluates candidates. Thread-safe: the loop calls it from several trajectories; an
/// implementation serialises work per GPU and uses every GPU it was given.
class evaluator {
 public:
  virtual ~evaluator() = default;
  /// Never throws for a bad candidate: compile errors, mismatches, crashes and hangs are
  /// verdicts. Throws only when evaluation itself is impossible (no harness, replay miss).
  virtual evaluation evaluate(const std::string& task_name, const std::string& source,
                              const evaluation_request& request) = 0;
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
evaluation evaluation_from_json(const nlohmann::json& j);

}  // namespace kblaster::engine::optimize
