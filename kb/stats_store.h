// Reading and writing rows of opt_stats (shared by attempts and import).
#pragma once

#include "kb/sqlite.h"
#include "kb/types.h"

namespace kblaster::kb {

/// Statistics from an opt_stats row snapshot (JSON object); zeros for null.
stats stats_from_row(const nlohmann::json& row);

/// Writes the statistics of (state, technique, arch), replacing any previous row.
void upsert_stats(sql::database& db, std::int64_t state_id, std::int64_t technique_id,
                  const std::string& arch, const stats& s);

}  // namespace kblaster::kb
