// Reading and writing rows of opt_stats (shared by attempts, the catalog, export and import):
// one list of its columns, one reader, one writer.
#pragma once

#include "kb/sql.h"
#include "kb/types.h"

#include <string>
#include <vector>

namespace kblaster::kb {

/// opt_stats' statistics columns, in the order stats_from reads them.
const std::vector<std::string>& stats_column_names();

/// Those columns as a SELECT list, each written as `pattern` with {} replaced by the column's
/// name ("g.{}", "coalesce(x.{}, g.{}, 0)"); "{}" alone gives the bare names.
std::string stats_select_list(const std::string& pattern = "{}");

/// Statistics from a row whose stats_column_names() start at column `first`.
stats stats_from(const sql::statement& s, int first);

/// Statistics from an opt_stats row snapshot (JSON object); zeros for null.
stats stats_from_row(const nlohmann::json& row);

/// The statistics of (state, technique, arch), nullopt without a row.
std::optional<stats> read_stats(sql::database& db, std::int64_t state_id, std::int64_t technique_id,
                                const std::string& arch);

/// Writes the statistics of (state, technique, arch), replacing any previous row.
void upsert_stats(sql::database& db, std::int64_t state_id, std::int64_t technique_id,
                  const std::string& arch, const stats& s);

/// The statistics columns in alphabetical order (as a row snapshot lists them) and their values
/// in that order, for logging an opt_stats change from values at hand.
const std::vector<std::string>& stats_log_columns();
nlohmann::json stats_log_values(const stats& s);

}  // namespace kblaster::kb
