// What only the SQLite backend offers, for opening files (kb_open.cpp) and for tests.
#pragma once

#include "kb/sql.h"

struct sqlite3;

namespace kblaster::kb::sql {

/// The SQLite handle of a file connection; nullptr for a server connection.
sqlite3* sqlite_handle(database& db) noexcept;

}  // namespace kblaster::kb::sql
