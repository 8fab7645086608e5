// The update log: every mutation of the learned tables is recorded as a before/after diff of
// one row, grouped into an update with its cause, so that any update can be reverted.
#pragma once

#include "kb/log_format.h"
#include "kb/sql.h"
#include "kb/types.h"

#include <functional>

namespace kblaster::kb {

/// Collects row changes inside one transaction and writes them as one update record.
/// Not thread-safe; lives for the duration of one transaction.
class change_log {
 public:
  explicit change_log(sql::database& db) : db_(db) {}

  /// The row of `table` with primary key `key` as a JSON object, or null when absent.
  nlohmann::json snapshot(const std::string& table, const nlohmann::json& key);

  /// Runs `mutate` and records how the row changed (nothing when it did not).
  void track(const std::string& table, const nlohmann::json& key, const std::function<void()>& mutate);

  /// Records an already observed change.
  void record(const std::string& table, const nlohmann::json& key, const nlohmann::json& before,
              const nlohmann::json& after);

  /// Records a change built by the caller from values it wrote (no re-reading of the row); an
  /// update without columns is nothing.
  void record(logged_change c);

  /// True when a change to `table` was recorded.
  bool touched(const std::string& table) const;
  std::size_t size() const noexcept { return changes_.size(); }

  /// Writes the update record and its changes; returns its id (0 when nothing changed).
  std::int64_t commit(const update_cause& cause);

 private:
  sql::database& db_;
  std::vector<logged_change> changes_;
};

/// The primary-key columns of a table the log may touch; throws for any other table.
const std::vector<std::string>& key_columns(const std::string& table);

/// Undoes update `id` in the caller's transaction, recording the undo in `log`.
/// Throws kb_error (conflict) when a later update changed the same values.
void revert_changes(sql::database& db, std::int64_t id, change_log& log);

}  // namespace kblaster::kb
