// The record of one finished step of a trajectory, as the loop keeps it in the checkpoint
// (steps.jsonl, one line per step) and reads it back on resume, for the KB commit and for the
// run report. Typed here so that the loop never reads its own JSON back by key; the JSON field
// names are the checkpoint's on-disk format and do not change.
#pragma once

#include "engine/evaluate/evaluator.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// The soft verifier's second opinion on a candidate that would have become the new version.
struct soft_verdict {
  bool pass = false;
  std::string summary;
};

/// One evaluated candidate of a step.
struct candidate_record {
  std::string technique;
  std::string label;  ///< the mechanical variant's label, or "llm"
  std::string hash;   ///< source_hash(); the source is in the checkpoint's sources/
  nlohmann::json parameters = nlohmann::json::object();  ///< the variant's knobs, e.g. {"block": 512}
  evaluation eval;
  std::string state_after;                ///< KB state of the candidate; empty unless correct and profiled
                                          ///< (the loop profiles the versions steps start from, not every candidate)
  std::optional<double> measured_speedup;  ///< over the step's start, when both were timed
  std::optional<soft_verdict> soft_verifier;
};

/// Which tier made the step's candidates.
enum class step_tier { none, mechanical, llm };

/// One finished step (iteration, trajectory, step).
struct step_record {
  int iteration = 0;
  int trajectory = 0;
  int step = 0;
  std::string start;  ///< hash of the version the step started from
  double start_ms = 0;
  std::string state_before;
  double state_score = 0;
  std::vector<candidate_record> candidates;
  std::map<std::string, std::int64_t> tokens;  ///< model tokens by agent role
  std::string result;  ///< hash of the version the trajectory continues from
  bool end = false;    ///< nothing applied any more: the trajectory stops here
  std::optional<std::string> note;  ///< why the step ended or what went wrong, for the user
  step_tier tier = step_tier::none;
  // The technique chosen (absent when the step ended before choosing one).
  std::optional<std::string> technique;
  std::string reason;  ///< why the policy chose it
  std::optional<double> predicted;  ///< the KB's predicted speedup
  std::optional<double> confidence;
  // The lowering agent's figures (model tier only).
  std::optional<int> repairs;
  std::optional<std::vector<std::string>> failures;  ///< what each failed attempt said
  std::optional<std::string> agent_status;
  double gpu_seconds = 0;  ///< device time of the step's candidates
  /// The soft verifier's verdict on the step's new best waits for a deferred model: the step is
  /// not finished and never journaled as it stands. Its trajectory goes on as if the verdict
  /// passed, so that the next step's question joins the verdict's round (the loop's own, not
  /// part of the checkpoint).
  bool verdict_pending = false;

  /// Adds `n` tokens spent by `role`.
  void add_tokens(const std::string& role, std::int64_t n);
  /// Sum of the candidates' device time.
  double candidates_gpu_seconds() const;
};

std::string to_string(step_tier t);

nlohmann::json to_json(const candidate_record& c);
nlohmann::json to_json(const step_record& r);
/// Throws std::invalid_argument naming the field that is missing or of the wrong type.
step_record step_record_from_json(const nlohmann::json& j);

}  // namespace kblaster::engine::optimize
