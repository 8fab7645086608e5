// A run's checkpoint: a manifest (what was asked, what is committed) and an append-only journal
// of finished steps, in the run's output directory. Every finished step is one fsync'd JSON
// line, so a run killed at any moment resumes from its last finished step; a torn last line
// (the kill came mid-write) is dropped. Sources live beside it, one file per hash.
#pragma once

#include "engine/optimize/step_record.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>

namespace kblaster::engine::optimize {

/// The checkpoint of one run directory. Thread-safe.
class run_journal {
 public:
  /// Opens `dir` for a run described by `identity` (task, input hash, options, seed). An empty
  /// or new directory starts a run; one holding a run of the same identity resumes it; one
  /// holding another run is refused (std::invalid_argument naming the differing field), and so
  /// is a journal line that parses but is not a step record (naming the line and the field).
  run_journal(std::filesystem::path dir, nlohmann::json identity);

  bool resumed() const noexcept { return resumed_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// The finished step (iteration, trajectory, step), when the journal has it.
  std::optional<step_record> find_step(int iteration, int trajectory, int step) const;
  /// Every finished step, in (iteration, trajectory, step) order.
  std::vector<step_record> steps() const;
  /// Appends a finished step durably.
  void append_step(const step_record& step);

  /// A named record outside the steps (the baseline evaluation), stored in the manifest.
  std::optional<nlohmann::json> record(const std::string& name) const;
  void set_record(const std::string& name, const nlohmann::json& value);

  /// Iteration milestones: "committed" (attempts in the KB), "gradient" (textual update done).
  bool reached(int iteration, const std::string& milestone) const;
  void mark(int iteration, const std::string& milestone);

  /// Keeps a candidate's evaluation under its hash (replacing an earlier one: a profile added),
  /// so that a step cut short (a stop, a deferred model's question) and redone on resume takes
  /// its measured candidates from here instead of measuring them again.
  void put_evaluation(const std::string& hash, const evaluation& e);
  /// The evaluation kept for `hash`; nullopt when none (or it cannot be read: measured again).
  std::optional<evaluation> evaluation_of(const std::string& hash) const;

  /// Stores a candidate's source under its hash (idempotent) and reads it back.
  void put_source(const std::string& hash, const std::string& source);
  std::string source(const std::string& hash) const;

 private:
  void write_manifest();  // under mutex_
  std::filesystem::path dir_;
  nlohmann::json manifest_;
  bool resumed_ = false;
  mutable std::mutex mutex_;
  std::map<std::tuple<int, int, int>, step_record> steps_;
};

}  // namespace kblaster::engine::optimize
