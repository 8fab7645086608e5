// The bench result store: one directory per run, safe for many writers at once (local workers,
// Slurm array tasks on a shared filesystem). Layout:
//   RUN/manifest.json            hyperparameters, GPU, KB, git version (first writer wins)
//   RUN/results/L1_23_Softmax.json   one per problem, written atomically (temp file + rename)
//   RUN/tasks/L1_23_Softmax/     the imported task        RUN/work/L1_23_Softmax/  the loop's out_dir
// A problem whose result file exists is done: a restarted run skips it (resume).
#pragma once

#include "engine/bench/problem_result.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// A store that cannot be read or written; the message names the file.
class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `j` to `path` so that a reader sees the old file or the whole new one, never a part:
/// a unique temporary beside it, flushed, then renamed. Throws store_error.
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);

/// Reads a JSON file; throws store_error naming the file.
nlohmann::json read_json_file(const std::filesystem::path& path);

/// One run's directory.
class result_store {
 public:
  /// Creates RUN and its subdirectories when missing. Throws store_error.
  explicit result_store(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path manifest_path() const { return root_ / "manifest.json"; }
  std::filesystem::path result_path(const std::string& key) const;
  std::filesystem::path task_dir(const std::string& key) const { return root_ / "tasks" / key; }
  std::filesystem::path work_dir(const std::string& key) const { return root_ / "work" / key; }

  /// Writes the manifest unless one exists; then checks that `manifest["hyperparameters"]` equals
  /// the stored one, so that resuming with other settings is refused. Throws store_error.
  void ensure_manifest(const nlohmann::json& manifest);
  /// The stored manifest, or null when none.
  std::optional<nlohmann::json> manifest() const;

  bool has(const std::string& key) const;
  void put(const problem_result& r) const;
  /// Every stored result, in key order. Throws store_error for an unreadable file.
  std::vector<problem_result> results() const;

 private:
  std::filesystem::path root_;
};

/// Copies the results of several run directories (e.g. shards written to separate places) into
/// `out` (created), with the first manifest found. A problem present in two inputs keeps the one
/// finished last. Returns the number of results in `out`.
int merge_stores(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& out);

}  // namespace kblaster::engine::bench
