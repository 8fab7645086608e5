// "Judge this candidate", the use case behind `kblaster eval`, as engine/optimize/service is
// Optimize's: the command line only turns flags into an evaluate_request and the outcome into
// lines or JSON.
//
// Given a task and (or not) a candidate source, the service picks the source and the device
// (a host source on the CPU, a .cu on the GPU), builds the candidate and a kernel reference,
// sends the harness its verify or evaluate request, then probes the reference for a degenerate
// task, all under one stop token: a stop kills the compiler or the harness in flight and the
// outcome says it was cancelled, with nothing written but the build cache's whole entries.
#pragma once

#include "engine/evaluate/harness_client.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/task.h"
#include "engine/toolchain/task_build.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>

namespace kblaster::engine {

struct evaluate_request {
  std::string task;             ///< a task: a folder with task.json, a .json, or a .cu with a kblaster-task comment
  std::string candidate;        ///< the source to judge; empty: the task's kernel for the device
  std::string device = "auto";  ///< cpu | cuda | auto (a GPU here and a task kernel: cuda)
  bool verify_only = false;     ///< correctness only, no timing
  bool probe = true;            ///< probe the reference for a constant output or an ignored input
  std::string harness;          ///< kblaster-harness; empty: found
  std::chrono::milliseconds watchdog{10'000};
  double max_seconds = 2;       ///< timing cap per side
};

/// Why the candidate could not be judged at all (a candidate that fails to build is a verdict).
enum class evaluate_refusal_kind {
  bad_input,        ///< the task cannot be read, no source to judge, or a source for the other device
  reference_build,  ///< the task's kernel reference does not build
};

class evaluate_refusal : public std::runtime_error {
 public:
  evaluate_refusal(evaluate_refusal_kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  evaluate_refusal_kind kind() const { return kind_; }

 private:
  evaluate_refusal_kind kind_;
};

struct evaluate_outcome {
  task_spec task;
  std::string candidate;  ///< the source judged
  std::string device;     ///< cpu | cuda, as decided
  candidate_build build;
  /// The harness's verdict (its reply, or why there is none); for a candidate that does not
  /// build, the compile failure. Empty when cancelled before the harness answered.
  nlohmann::json result;
  std::optional<reference_probe> probe;  ///< when probed (not with probe = false, nor when the harness did not start)
  bool cancelled = false;                ///< the stop came first: no verdict stands

  /// The verdict: "pass", "fail", "needs_review", "error"...
  std::string verdict() const { return result.is_object() ? result.value("verdict", "") : ""; }
};

/// What the front end hears while the service works: one line per phase ("compiling ...").
struct evaluate_events {
  std::function<void(const std::string&)> progress;
};

/// Runs the use case. Throws evaluate_refusal.
evaluate_outcome evaluate_candidate(const evaluate_request& request, const evaluate_events& events, std::stop_token stop);

/// The outcome as `kblaster eval --json` prints it: task, candidate, device, build, result and
/// (when probed) reference_probe.
nlohmann::json to_json(const evaluate_outcome& outcome);

}  // namespace kblaster::engine
