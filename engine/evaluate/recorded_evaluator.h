// Recording and replaying evaluations: a recorder wraps the live evaluator on the GPU machine
// and appends every verdict to a JSON-lines file; a replayer serves those verdicts by (task,
// source hash) where no GPU is present, so that CI and laptops run the optimizer on real
// measurements. File format, one JSON object per line:
//   {"$source": "who recorded this: host, GPU, date", "host": ..., "evaluator": ..., "date": ...}
//   {"task": "vector_add", "hash": "0123abcd...", "request": {"time": true, "profile": true},
//    "evaluation": {...to_json(evaluation)...}}
// A file may hold several "$source" lines (one per recording session appended to it).
#pragma once

#include "engine/evaluate/evaluator.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kblaster::engine::optimize {

/// Wraps another evaluator and appends each evaluation it returns to a file. Thread-safe: the
/// inner evaluator runs unlocked; writing a line is serialised and flushed at once, so a
/// killed run keeps every line written before it died.
class recording_evaluator final : public evaluator {
 public:
  /// Appends to `file` (created when missing), first writing a "$source" note: `note` when
  /// given, else "HOST, <inner's describe()>, DATE". Throws evaluation_error when the file
  /// cannot be opened.
  recording_evaluator(evaluator& inner, std::filesystem::path file, std::string note = "");
  evaluation evaluate(const std::string& task_name, const std::string& source,
                      const evaluation_request& request) override;
  void prepare(const std::string& task_name, const std::string& source) override { inner_.prepare(task_name, source); }
  std::string describe() const override;
  int parallelism() const override { return inner_.parallelism(); }
  /// Lines written so far (the note excluded).
  int recorded() const;

 private:
  evaluator& inner_;
  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::ofstream out_;
  int recorded_ = 0;
};

class replay_evaluator;

/// A recording session resumed: what the recording file held when the run started (an earlier
/// run of the same command, stopped or killed) is served from it, everything else goes to `live`
/// (the recorder around the live evaluator), so that a resumed bench measures each kernel once
/// and its replay serves every run the measurement that run was given. Thread-safe.
class recorded_first_evaluator final : public evaluator {
 public:
  recorded_first_evaluator(const replay_evaluator& earlier, evaluator& live) : earlier_(earlier), live_(live) {}
  evaluation evaluate(const std::string& task_name, const std::string& source,
                      const evaluation_request& request) override;
  void prepare(const std::string& task_name, const std::string& source) override { live_.prepare(task_name, source); }
  std::string describe() const override;
  int parallelism() const override { return live_.parallelism(); }

 private:
  const replay_evaluator& earlier_;
  evaluator& live_;
};

/// Serves recorded evaluations. Thread-safe (read-only after construction).
class replay_evaluator final : public evaluator {
 public:
  /// Loads every file. Throws evaluation_error for a missing file or a corrupt line (naming the
  /// file and the line number).
  explicit replay_evaluator(std::vector<std::filesystem::path> files);
  /// Loads recordings held in memory, named `origin` in errors and in describe() (tests, fuzzing).
  replay_evaluator(std::string_view text, const std::string& origin);
  /// The recording of (task, source_hash(task, source)), marked replayed. Prefers one made
  /// with the same request, then one that did at least as much (timed, profiled). Throws
  /// evaluation_error on a miss, saying which task and hash and how many recordings the task has.
  evaluation evaluate(const std::string& task_name, const std::string& source,
                      const evaluation_request& request) override;
  /// The recording of (task, source) that did at least what `request` asks (timed where timing
  /// is asked, profiled where a profile is), served as evaluate() serves it; nullopt when none did.
  std::optional<evaluation> find(const std::string& task_name, const std::string& source,
                                 const evaluation_request& request) const;
  /// "replay of FILE (N recordings), recorded on GPU NAME (sm_XX): <first $source note>".
  std::string describe() const override;
  /// Recordings loaded, over every file.
  std::size_t size() const { return count_; }
  /// The "$source" notes found, in file order.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct recording {
    evaluation_request request;
    evaluation result;
  };
  static const recording& best_recording(const std::vector<recording>& recordings, const evaluation_request& request);
  static evaluation served(const recording& r, const evaluation_request& request);
  std::vector<std::filesystem::path> files_;
  std::map<std::pair<std::string, std::string>, std::vector<recording>> by_key_;  // (task, hash)
  std::map<std::string, int> per_task_;
  std::vector<std::string> notes_;
  std::vector<std::string> gpus_;  // distinct "gpu_name (arch)" seen, in order
  std::size_t count_ = 0;
  void load(const std::filesystem::path& file);
  void load_text(std::string_view text, const std::string& origin);
};

}  // namespace kblaster::engine::optimize
