// The SQLite backend of the connection layer: result codes become kb_error; the neutral
// database, statement and transaction (kb/sql.h) are defined here too.
#include "kb/sql.h"
#include "kb/sql_sqlite.h"

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

namespace {

// Throws kb_error for a non-OK result code, with SQLite's message for the connection.
void check(sqlite3* db, int code, std::string_view what) {
  if (code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE) return;
  std::string msg(what);
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB)
    msg += " (the KB file is damaged; it was left untouched)";
  throw kb_error(kind_of(code), msg);
}

class sqlite_statement final : public statement_backend {
 public:
  sqlite_statement(sqlite3* db, std::string_view sql) : db_(db) {
    sqlite3_stmt* raw = nullptr;
    check(db, sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &raw,
                                 nullptr),
          "preparing SQL");
    stmt_.reset(raw);
  }

  void bind_int(int index, std::int64_t value) override {
    check(db_, sqlite3_bind_int64(stmt_.get(), index, value), "binding");
  }
  void bind_double(int index, double value) override {
    check(db_, sqlite3_bind_double(stmt_.get(), index, value), "binding");
  }
  void bind_text(int index, std::string_view value) override {
    check(db_, sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
          "binding");
  }
  void bind_null(int index) override { check(db_, sqlite3_bind_null(stmt_.get(), index), "binding"); }

  bool step() override {
    const int rc = sqlite3_step(stmt_.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    check(db_, rc, "running SQL");
    return false;
  }
  void reset() noexcept override {
    sqlite3_reset(stmt_.get());
    sqlite3_clear_bindings(stmt_.get());
  }

  int column_count() const noexcept override { return sqlite3_column_count(stmt_.get()); }
  std::string column_name(int i) const override { return sqlite3_column_name(stmt_.get(), i); }
  value_type column_type(int i) const noexcept override {
    switch (sqlite3_column_type(stmt_.get(), i)) {
      case SQLITE_INTEGER: return value_type::integer;
      case SQLITE_FLOAT: return value_type::real;
      case SQLITE_NULL: return value_type::null;
      default: return value_type::text;
    }
  }
  std::int64_t get_int(int i) const noexcept override { return sqlite3_column_int64(stmt_.get(), i); }
  double get_double(int i) const noexcept override { return sqlite3_column_double(stmt_.get(), i); }
  std::string get_text(int i) const override {
    const auto* p = sqlite3_column_text(stmt_.get(), i);
    if (!p) return {};
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), i)));
  }

 private:
  struct finalizer {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
  };
  std::unique_ptr<sqlite3_stmt, finalizer> stmt_;
  sqlite3* db_ = nullptr;
};

class sqlite_connection final : public connection_backend {
 public:
  sqlite_connection(const std::string& path, int flags, id_memo* memo) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) check(raw, rc, "opening " + path);
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_rollback_hook(raw, [](void* m) { static_cast<id_memo*>(m)->clear(); }, memo);
  }

  dialect kind() const noexcept override { return dialect::sqlite; }
  void exec(std::string_view sql) override {
    std::string text(sql);
    char* err = nullptr;
    const int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &err);
    if (err) sqlite3_free(err);
    check(db_.get(), rc, "executing SQL");
  }
  std::unique_ptr<statement_backend> prepare(std::string_view sql) override {
    return std::make_unique<sqlite_statement>(db_.get(), sql);
  }
  std::int64_t last_insert_id() override { return sqlite3_last_insert_rowid(db_.get()); }
  int changes() const noexcept override { return sqlite3_changes(db_.get()); }
  bool read_only() const noexcept override { return sqlite3_db_readonly(db_.get(), "main") == 1; }
  // BEGIN and COMMIT run as kept statements: sqlite3_exec would parse them again every time.
  void begin_write() override { run_kept(begin_, "BEGIN IMMEDIATE"); }
  void commit() override { run_kept(commit_, "COMMIT"); }
  void rollback() noexcept override {
    try {
      exec("ROLLBACK");
    } catch (...) {
      // A failed rollback (e.g. the transaction was already rolled back by SQLite after an I/O
      // error) leaves nothing to undo; rollback runs from destructors and must not throw.
    }
  }
  bool has_table(const std::string& name) override {
    sqlite_statement s(db_.get(), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
    s.bind_text(1, name);
    return s.step() && s.get_int(0) > 0;
  }
  std::vector<std::string> columns_of(const std::string& table) override {
    std::vector<std::string> cols;
    sqlite_statement s(db_.get(), "SELECT name FROM pragma_table_info(?) ORDER BY cid");
    s.bind_text(1, table);
    while (s.step()) cols.push_back(s.get_text(0));
    return cols;
  }
  // data_version changes when another connection commits, total_changes when this one writes
  // (raw SQL through knowledge_base::db() included). Both only grow; their sum changes with either.
  std::int64_t change_counter() override {
    if (!data_version_) data_version_ = std::make_unique<sqlite_statement>(db_.get(), "PRAGMA data_version");
    const std::int64_t version = data_version_->step() ? data_version_->get_int(0) : 0;
    data_version_->reset();
    return (version << 32) + sqlite3_total_changes64(db_.get());
  }
  bool reconnect() override { return false; }

  sqlite3* handle() const noexcept { return db_.get(); }

 private:
  void run_kept(std::unique_ptr<sqlite_statement>& kept, const char* sql) {
    if (!kept) kept = std::make_unique<sqlite_statement>(db_.get(), sql);
    struct resetter {
      sqlite_statement& s;
      ~resetter() { s.reset(); }
    } r{*kept};
    while (kept->step()) {
    }
  }

  struct closer {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, closer> db_;
  // Declared after db_: statements are finalized before the connection closes.
  std::unique_ptr<sqlite_statement> begin_, commit_, data_version_;
};

}  // namespace

sqlite3* sqlite_handle(database& db) noexcept {
  auto* c = dynamic_cast<sqlite_connection*>(&db.backend());
  return c ? c->handle() : nullptr;
}

database::database(const std::string& path, int flags)
    : conn_(std::make_unique<sqlite_connection>(path, flags, memo_.get())) {}

}  // namespace kblaster::kb::sql
