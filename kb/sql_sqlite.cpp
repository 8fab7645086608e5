// The SQLite RAII wrapper: result codes become kb_error, statements are cached per connection.
#include "kb/sqlite.h"

#include <sqlite3.h>

namespace kblaster::kb::sql {

error_kind kind_of(int code) noexcept {
  switch (code & 0xff) {
    case SQLITE_CORRUPT: return error_kind::corrupt;
    case SQLITE_NOTADB: return error_kind::not_sqlite;
    case SQLITE_READONLY: return error_kind::read_only;
    case SQLITE_PERM: return error_kind::read_only;
    case SQLITE_CANTOPEN: return error_kind::cannot_open;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return error_kind::busy;
    case SQLITE_FULL:
    case SQLITE_IOERR: return error_kind::io;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG: return error_kind::invalid_argument;
    default: return error_kind::internal;
  }
}

void check(sqlite3* db, int code, std::string_view what) {
  if (code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE) return;
  std::string msg(what);
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB)
    msg += " (the KB file is damaged; it was left untouched)";
  throw kb_error(kind_of(code), msg);
}

void statement::finalizer::operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }

statement::statement(sqlite3* db, std::string_view sql) : db_(db) {
  sqlite3_stmt* raw = nullptr;
  check(db, sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                               &raw, nullptr),
        "preparing SQL");
  stmt_.reset(raw);
}

statement& statement::bind(int index, std::int64_t value) {
  check(db_, sqlite3_bind_int64(stmt_.get(), index, value), "binding");
  return *this;
}
statement& statement::bind(int index, double value) {
  check(db_, sqlite3_bind_double(stmt_.get(), index, value), "binding");
  return *this;
}
statement& statement::bind(int index, std::string_view value) {
  check(db_,
        sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT,
                            SQLITE_UTF8),
        "binding");
  return *this;
}
statement& statement::bind_null(int index) {
  check(db_, sqlite3_bind_null(stmt_.get(), index), "binding");
  return *this;
}

bool statement::step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  check(db_, rc, "running SQL");
  return false;
}

void statement::run() {
  statement_use use(*this);
  while (step()) {
  }
}

void statement::reset() noexcept {
  if (!stmt_) return;
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

int statement::column_count() const noexcept { return sqlite3_column_count(stmt_.get()); }
std::string statement::column_name(int i) const { return sqlite3_column_name(stmt_.get(), i); }
bool statement::is_null(int i) const noexcept {
  return sqlite3_column_type(stmt_.get(), i) == SQLITE_NULL;
}
int statement::column_type(int i) const noexcept { return sqlite3_column_type(stmt_.get(), i); }
std::int64_t statement::get_int(int i) const noexcept { return sqlite3_column_int64(stmt_.get(), i); }
double statement::get_double(int i) const noexcept { return sqlite3_column_double(stmt_.get(), i); }
std::string statement::get_text(int i) const {
  const auto* p = sqlite3_column_text(stmt_.get(), i);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), i)));
}
std::optional<double> statement::get_opt_double(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_double(i);
}
std::optional<std::int64_t> statement::get_opt_int(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_int(i);
}

void database::closer::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

database::database(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) check(raw, rc, "opening " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_rollback_hook(
      raw, [](void* memo) { static_cast<id_memo*>(memo)->clear(); }, memo_.get());
}

void database::exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  check(db_.get(), rc, "executing SQL");
}

statement database::prepare(std::string_view sql) { return statement(db_.get(), sql); }

statement& database::cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(std::string(sql), statement(db_.get(), sql)).first;
  return it->second;
}

std::int64_t database::query_int(std::string_view sql, std::int64_t fallback) {
  auto s = prepare(sql);
  if (!s.step() || s.is_null(0)) return fallback;
  return s.get_int(0);
}

std::string database::query_text(std::string_view sql) {
  auto s = prepare(sql);
  if (!s.step()) return {};
  return s.get_text(0);
}

std::int64_t database::last_insert_rowid() const noexcept { return sqlite3_last_insert_rowid(db_.get()); }
int database::changes() const noexcept { return sqlite3_changes(db_.get()); }
bool database::read_only() const noexcept { return sqlite3_db_readonly(db_.get(), "main") == 1; }

// BEGIN and COMMIT run as cached statements: sqlite3_exec would parse them again every time.
transaction::transaction(database& db) : db_(db) { db_.cached("BEGIN IMMEDIATE").run(); }
transaction::~transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
      // A failed rollback (e.g. the transaction was already rolled back by SQLite after an I/O
      // error) leaves nothing to undo; destructors must not throw.
    }
  }
}
void transaction::commit() {
  db_.cached("COMMIT").run();
  done_ = true;
}

}  // namespace kblaster::kb::sql
