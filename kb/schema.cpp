// Migrations of the KB schema. Each entry upgrades version N-1 to N; never edit a released one,
// append a new one instead (tests open files of every earlier version).
#include "kb/schema.h"

#include "kb/log_format.h"
#include "kb/note_needs.h"
#include "support/time.h"

#include <array>
#include <string>

namespace kblaster::kb::schema {
namespace {

// Version 1: states, techniques, per-state optimizations with statistics, the replay buffer.
constexpr const char* v1 = R"sql(
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE states (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  primary_bottleneck TEXT NOT NULL,
  secondary TEXT NOT NULL DEFAULT '[]',     -- JSON array of characteristic names
  criteria TEXT NOT NULL DEFAULT '[]',      -- JSON array of metric conditions
  scope TEXT NOT NULL DEFAULT 'all',        -- 'all' or an architecture family such as sm_90
  origin TEXT NOT NULL DEFAULT 'seed',      -- seed | discovered | imported
  description TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT ''
);
CREATE INDEX states_primary ON states(primary_bottleneck);
CREATE TABLE techniques (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  category TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE optimizations (
  state_id INTEGER NOT NULL REFERENCES states(id) ON DELETE CASCADE,
  technique_id INTEGER NOT NULL REFERENCES techniques(id) ON DELETE CASCADE,
  prior_speedup REAL NOT NULL DEFAULT 1.1,  -- belief before any attempt; edited by the update agents
  note TEXT NOT NULL DEFAULT '',            -- how the technique applies to this state
  PRIMARY KEY (state_id, technique_id)
) WITHOUT ROWID;
CREATE TABLE opt_stats (
  state_id INTEGER NOT NULL,
  technique_id INTEGER NOT NULL,
  arch TEXT NOT NULL,                       -- 'all' aggregates every architecture
  attempts INTEGER NOT NULL DEFAULT 0,
  compile_failures INTEGER NOT NULL DEFAULT 0,
  incorrect INTEGER NOT NULL DEFAULT 0,
  successes INTEGER NOT NULL DEFAULT 0,     -- correct and faster
  n_measured INTEGER NOT NULL DEFAULT 0,    -- correct attempts with a measured speedup
  mean_log_speedup REAL NOT NULL DEFAULT 0,
  m2_log_speedup REAL NOT NULL DEFAULT 0,   -- Welford's sum of squared deviations
  last_used TEXT,
  PRIMARY KEY (state_id, technique_id, arch)
) WITHOUT ROWID;
CREATE TABLE attempts (
  id INTEGER PRIMARY KEY,
  task TEXT NOT NULL,
  trajectory TEXT NOT NULL DEFAULT '',
  iteration INTEGER NOT NULL DEFAULT 0,
  step INTEGER NOT NULL DEFAULT 0,
  state_before_id INTEGER NOT NULL,
  state_after_id INTEGER,
  technique_id INTEGER NOT NULL,
  predicted_speedup REAL,
  measured_speedup REAL,
  compile_ok INTEGER NOT NULL,
  correct INTEGER NOT NULL,
  runtime_ms REAL,
  gpu_name TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL
);
CREATE INDEX attempts_task ON attempts(task, trajectory, step);
)sql";

// Version 2: transitions between states and the lessons the LLM writes.
constexpr const char* v2 = R"sql(
CREATE TABLE transitions (
  from_state_id INTEGER NOT NULL,
  technique_id INTEGER NOT NULL,
  to_state_id INTEGER NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  mean_log_speedup REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (from_state_id, technique_id, to_state_id)
) WITHOUT ROWID;
CREATE TABLE lessons (
  id INTEGER PRIMARY KEY,
  state_id INTEGER NOT NULL REFERENCES states(id) ON DELETE CASCADE,
  technique TEXT NOT NULL DEFAULT '',       -- empty: about the state as a whole
  arch TEXT NOT NULL DEFAULT 'all',
  text TEXT NOT NULL,
  provenance TEXT NOT NULL DEFAULT '',      -- which agent, model, iteration and attempts
  created_at TEXT NOT NULL
);
CREATE INDEX lessons_state ON lessons(state_id);
)sql";

// Version 3: the update log (revertible), and attempt details the engine started reporting.
constexpr const char* v3 = R"sql(
CREATE TABLE updates (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL,
  cause TEXT NOT NULL,                      -- numeric | textual_gradient | import | seed | manual | revert
  detail TEXT NOT NULL DEFAULT '',          -- e.g. the agents' textual output
  attempt_ids TEXT NOT NULL DEFAULT '[]',   -- JSON array of attempts that justified it
  reverted_by INTEGER
);
CREATE TABLE update_changes (             -- a rowid table: rows are appended, often large
  id INTEGER PRIMARY KEY,
  update_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  table_name TEXT NOT NULL,
  row_key TEXT NOT NULL,                    -- JSON object of the primary-key columns
  op TEXT NOT NULL,                         -- insert | update | delete
  before TEXT,                              -- JSON: changed columns (update) or whole row (delete)
  after TEXT                                -- JSON: changed columns (update) or whole row (insert)
);
CREATE INDEX update_changes_update ON update_changes(update_id, seq);
ALTER TABLE attempts ADD COLUMN elapsed_cycles INTEGER;
ALTER TABLE attempts ADD COLUMN tokens_by_role TEXT NOT NULL DEFAULT '{}';
ALTER TABLE attempts ADD COLUMN code_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX attempts_state ON attempts(state_before_id, technique_id);
)sql";

// Version 4: a compact update log (see log_format.h): key and values as JSON arrays, table and
// column names interned in log_columns, keyed by (update_id, seq) without a rowid or second
// index. attempts_state goes: no query reads it, and it cost a scattered page write per attempt.
constexpr const char* v4 = R"sql(
ALTER TABLE update_changes RENAME TO update_changes_v3;
DROP INDEX update_changes_update;
CREATE TABLE log_columns (
  id INTEGER PRIMARY KEY,
  table_name TEXT NOT NULL,
  names TEXT NOT NULL,                      -- JSON array of the column names a change holds
  UNIQUE (table_name, names)
);
CREATE TABLE update_changes (
  update_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  columns_id INTEGER NOT NULL,              -- log_columns: the table, and what before/after hold
  row_key TEXT NOT NULL,                    -- JSON array of the primary-key values, in key order
  before TEXT,                              -- JSON array of values; NULL for an insert
  after TEXT,                               -- JSON array of values; NULL for a delete
  PRIMARY KEY (update_id, seq)
) WITHOUT ROWID;
DROP INDEX attempts_state;
DROP INDEX attempts_task;
)sql";

// Version 5: the operations a note speaks of (kb/note_needs.h), as JSON clauses; a KB seeded
// before gets the seed's rewritten notes and their needs (upgrade_seed_notes).
constexpr const char* v5 = R"sql(
ALTER TABLE optimizations ADD COLUMN note_needs TEXT NOT NULL DEFAULT '[]';
)sql";

// Version 6: search credit (types.h search_credit): per step, what the search kept of a
// technique, with the winning variant's parameters; attempts say which of them stands for its
// step and with what parameters.
constexpr const char* v6 = R"sql(
ALTER TABLE opt_stats ADD COLUMN credit_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN credit_gains INTEGER NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN credit_new_bests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN credit_weight REAL NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN credit_log_gain REAL NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN best_log_gain REAL NOT NULL DEFAULT 0;
ALTER TABLE opt_stats ADD COLUMN best_parameters TEXT;     -- JSON of the winning variant's parameters
ALTER TABLE attempts ADD COLUMN parameters TEXT NOT NULL DEFAULT '{}';
ALTER TABLE attempts ADD COLUMN credits_step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN new_best INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 7: who taught each attempt and each update (kb/attribution.h): the OS user, or
// $KBLASTER_KB_USER; empty for what was written before.
constexpr const char* v7 = R"sql(
ALTER TABLE attempts ADD COLUMN taught_by TEXT NOT NULL DEFAULT '';
ALTER TABLE updates ADD COLUMN taught_by TEXT NOT NULL DEFAULT '';
)sql";

// PostgreSQL keeps a renamed table's primary key index under its old name, which version 4's
// new update_changes needs: the old one's is renamed first (a server KB is created at the
// latest version in one transaction, so its version-3 log is always empty).
constexpr const char* v4_server_before = R"sql(
ALTER TABLE update_changes RENAME CONSTRAINT update_changes_pkey TO update_changes_v3_pkey;
)sql";

struct migration {
  const char* sql;
  void (*convert)(sql::database&);  // data conversion after the SQL, or null
  const char* server_before = nullptr;  // PostgreSQL only, before the SQL
};

constexpr std::array migrations{migration{v1, nullptr}, migration{v2, nullptr}, migration{v3, nullptr},
                                migration{v4, convert_v3_log, v4_server_before}, migration{v5, upgrade_seed_notes},
                                migration{v6, nullptr}, migration{v7, nullptr}};

}  // namespace

int latest_version() noexcept { return static_cast<int>(migrations.size()); }

int current_version(sql::database& db) {
  if (!db.has_table("schema_version")) return 0;
  return static_cast<int>(db.query_int("SELECT max(version) FROM schema_version", 0));
}

void migrate(sql::database& db, int target) {
  for (int v = current_version(db) + 1; v <= target && v <= latest_version(); ++v) {
    const auto& m = migrations[static_cast<std::size_t>(v - 1)];
    if (m.server_before && db.kind() == sql::dialect::postgres) db.exec(m.server_before);
    db.exec(m.sql);
    if (m.convert) m.convert(db);
    auto& s = db.cached("INSERT INTO schema_version(version, applied_at) VALUES(?, ?)");
    s.bind(1, v).bind(2, support::utc_now(support::timestamp_precision::seconds)).run();
  }
  // A file is recognised by its application id; a server database by its schema_version table.
  if (db.kind() == sql::dialect::sqlite) db.exec("PRAGMA application_id = " + std::to_string(application_id));
}

}  // namespace kblaster::kb::schema
