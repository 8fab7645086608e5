// How the update log stores one changed row (schema version 4): the primary key and the values
// as JSON arrays, the table and column names interned once in log_columns. Version 3 stored
// whole JSON objects per change (names repeated in every row, a rowid and a second index), which
// made the log about three quarters of the file.
#pragma once

#include "kb/sql.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::kb {

/// One changed row of a learned table, as the log stores it.
struct logged_change {
  std::string table;
  nlohmann::json key;                ///< array of the primary-key values, in key_columns(table) order
  std::vector<std::string> columns;  ///< what `before` and `after` hold: the changed columns of an
                                     ///< update, every non-key column of an insert or delete
  nlohmann::json before;             ///< array of values, null for an insert
  nlohmann::json after;              ///< array of values, null for a delete

  /// "insert", "update" or "delete".
  const char* op() const noexcept;
  /// The key as an object keyed by column name.
  nlohmann::json key_object() const;
};

/// The change of a row given as whole-row objects (null when absent); nullopt when equal.
std::optional<logged_change> diff_rows(const std::string& table, const nlohmann::json& key_object,
                                       const nlohmann::json& before, const nlohmann::json& after);

/// Writes change `seq` of update `update_id` (in the caller's transaction).
void write_change(sql::database& db, std::int64_t update_id, std::int64_t seq, const logged_change& c);

/// The changes of one update in the order they were made. Throws kb_error (corrupt) for rows
/// that cannot be read back.
std::vector<logged_change> read_changes(sql::database& db, std::int64_t update_id);

/// A change as history shows it: {table, key, op, before, after}, rows as objects keyed by
/// column (an insert's `after` and a delete's `before` are the whole row, key included).
nlohmann::json display(const logged_change& c);

/// Migration to schema version 4: rewrites the version-3 log (renamed update_changes_v3 by the
/// migration's SQL) into the compact form, then drops it.
void convert_v3_log(sql::database& db);

}  // namespace kblaster::kb
