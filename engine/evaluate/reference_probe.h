// Is a task degenerate? The harness's "probe_reference" request (harness/degenerate.h) runs the
// task's reference on a few draws of its declared inputs and says, per output, whether it is the
// same on every draw (within the output's tolerance), and per input, whether a fresh draw of that
// input alone changes any output. A task with a constant output, or an ignored input, verifies
// nothing there: a kernel that writes the constant when its inputs look like the declared
// distribution passes. `kblaster import` and `eval` warn; a bench leaves such a problem's speedup
// out of its aggregates (engine/bench/metrics.h).
#pragma once

#include "engine/task/task.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

class harness_client;

/// One output of the reference over the probe's draws.
struct output_probe {
  std::string label;            ///< "output 0", as verdicts name it
  bool constant = false;        ///< every draw's output passes, within its tolerance, as the first draw's
  std::optional<double> value;  ///< a constant output whose every element, on every draw, is this value
  double spread = 0;            ///< largest element difference between a draw's output and the first draw's
};

/// One input: do the outputs depend on it?
struct input_probe {
  std::string label;            ///< "input 1 (y)"
  bool checked = false;         ///< redrawn alone; false: `why` says why not (a file, a fixed init, ...)
  bool ignored = false;         ///< checked, and a fresh draw of it left every output unchanged within tolerance
  double change = 0;            ///< checked: the largest output difference the fresh draw made
  std::string why;
};

/// What the probe found, or why it could not run.
struct reference_probe {
  int draws = 0;  ///< draws of the inputs the reference ran on
  std::vector<output_probe> outputs;
  std::vector<input_probe> inputs;
  std::string error;  ///< the probe did not run (no harness, the reference failed): why; empty: it ran

  bool ran() const { return error.empty(); }
  /// Some output is constant over the declared inputs.
  bool constant_output() const;
  /// Some output is constant, or some input ignored: the task's verification proves little, and
  /// a speedup measured on it means nothing.
  bool degenerate() const;
  /// "degenerate: output constant over the declared inputs" (and "degenerate: output does not depend
  /// on input 1 (y)"), joined by "; "; empty when the task is not degenerate or was not probed.
  std::string summary() const;
  /// One sentence per finding, for a warning line each.
  std::vector<std::string> findings() const;
};

/// The one reader of the harness's probe reply (a body with "verdict": "error" becomes `error`).
/// Throws std::runtime_error naming a missing or mistyped field.
reference_probe reference_probe_from_json(const nlohmann::json& reply);
/// The record as JSON (eval's --json, a bench's stored result): what reference_probe_from_json reads.
nlohmann::json to_json(const reference_probe& p);

/// Sends "probe_reference" for `task` through `client` and reads the reply; a harness that fails
/// or answers an error gives a probe with `error` set. Never throws for the task's sake.
reference_probe probe_reference(harness_client& client, const task_spec& task,
                                const std::string& reference_library, std::stop_token stop);

}  // namespace kblaster::engine
