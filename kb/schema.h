// The KB's schema (one for both backends) as an ordered list of migrations, and the application id that marks a
// file as ours.
#pragma once

#include "kb/sql.h"

namespace kblaster::kb::schema {

/// PRAGMA application_id of every KB file: "KBLS" in ASCII.
inline constexpr int application_id = 0x4B424C53;

/// The schema version this binary writes; files with a larger version are refused.
int latest_version() noexcept;

/// Version recorded in the file's schema_version table (0 for a file without one).
int current_version(sql::database& db);

/// Applies migrations (current, target] inside the caller's transaction.
void migrate(sql::database& db, int target);

}  // namespace kblaster::kb::schema
