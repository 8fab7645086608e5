// What the PostgreSQL backend exposes beyond kb/sql.h: its dialect translation, for tests.
#pragma once

#include <string>
#include <string_view>

namespace kblaster::kb::sql {

/// The KB's SQL (SQLite's dialect, portable subset) as PostgreSQL reads it: `?`/`?N` become
/// `$n`, INTEGER becomes BIGINT (an `INTEGER PRIMARY KEY` an identity column), REAL DOUBLE
/// PRECISION, WITHOUT ROWID and comments go. String literals are left alone.
std::string translate_for_postgres(std::string_view sql);

}  // namespace kblaster::kb::sql
