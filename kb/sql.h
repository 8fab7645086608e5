// The KB's connection layer, neutral between its two backends: an embedded SQLite file
// (sql_sqlite.cpp) and a PostgreSQL server reached through libpq (sql_postgres.cpp). The KB's
// statements are written in SQLite's dialect restricted to what both understand; the PostgreSQL
// backend translates the few spellings that differ (placeholders, column types, rowid tables).
// Every failing call throws kb_error.
#pragma once

#include "kb/error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kblaster::kb::sql {

/// Which engine a connection talks to.
enum class dialect { sqlite, postgres };

/// The type of a value in a result row.
enum class value_type { integer, real, text, null };

/// Maps an SQLite result code to the kb error kind a user can act on.
error_kind kind_of(int sqlite_code) noexcept;

/// Thrown when a server connection dropped; kind io. The transaction it interrupted was rolled
/// back by the server, so write_transaction() can run it again on a fresh connection.
class connection_lost : public kb_error {
 public:
  explicit connection_lost(const std::string& message) : kb_error(error_kind::io, message) {}
};

/// What a backend implements for one prepared statement.
class statement_backend {
 public:
  virtual ~statement_backend() = default;
  virtual void bind_int(int index, std::int64_t value) = 0;
  virtual void bind_double(int index, double value) = 0;
  virtual void bind_text(int index, std::string_view value) = 0;
  virtual void bind_null(int index) = 0;
  virtual bool step() = 0;
  virtual void reset() noexcept = 0;
  virtual int column_count() const noexcept = 0;
  virtual std::string column_name(int i) const = 0;
  virtual value_type column_type(int i) const noexcept = 0;
  virtual std::int64_t get_int(int i) const noexcept = 0;
  virtual double get_double(int i) const noexcept = 0;
  virtual std::string get_text(int i) const = 0;
};

/// What a backend implements for one connection.
class connection_backend {
 public:
  virtual ~connection_backend() = default;
  virtual dialect kind() const noexcept = 0;
  virtual void exec(std::string_view sql) = 0;
  virtual std::unique_ptr<statement_backend> prepare(std::string_view sql) = 0;
  /// The id the last INSERT into a table with an `id INTEGER PRIMARY KEY` gave its row.
  virtual std::int64_t last_insert_id() = 0;
  /// Rows changed by the last INSERT, UPDATE or DELETE.
  virtual int changes() const noexcept = 0;
  virtual bool read_only() const noexcept = 0;
  /// Starts a write transaction holding the KB's write lock, so that writers serialise.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  virtual bool has_table(const std::string& name) = 0;
  /// The table's column names, in order.
  virtual std::vector<std::string> columns_of(const std::string& table) = 0;
  /// A value that changes whenever any connection (this one included) commits a change.
  virtual std::int64_t change_counter() = 0;
  /// Waits for a dropped server connection to come back (bounded; throws kb_error when it
  /// stays away); false for a file, which has nothing to reconnect.
  virtual bool reconnect() = 0;
};

/// A prepared statement. Move-only. Not thread-safe.
class statement {
 public:
  statement() = default;
  explicit statement(std::unique_ptr<statement_backend> impl) : impl_(std::move(impl)) {}

  /// Binds by 1-based index. nullopt binds NULL.
  statement& bind(int index, std::int64_t value) { impl_->bind_int(index, value); return *this; }
  statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  statement& bind(int index, double value) { impl_->bind_double(index, value); return *this; }
  statement& bind(int index, std::string_view value) { impl_->bind_text(index, value); return *this; }
  statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  statement& bind_null(int index) { impl_->bind_null(index); return *this; }
  template <typename T>
  statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  /// Advances; true while a row is available, false when done.
  bool step() { return impl_->step(); }
  /// Runs a statement that returns no rows (or ignores them), then resets it.
  void run();
  /// Resets for re-use and clears bindings.
  void reset() noexcept { if (impl_) impl_->reset(); }

  int column_count() const noexcept { return impl_->column_count(); }
  std::string column_name(int i) const { return impl_->column_name(i); }
  bool is_null(int i) const noexcept { return column_type(i) == value_type::null; }
  value_type column_type(int i) const noexcept { return impl_->column_type(i); }
  std::int64_t get_int(int i) const noexcept { return impl_->get_int(i); }
  double get_double(int i) const noexcept { return impl_->get_double(i); }
  std::string get_text(int i) const { return impl_->get_text(i); }
  std::optional<double> get_opt_double(int i) const;
  std::optional<std::int64_t> get_opt_int(int i) const;

 private:
  std::unique_ptr<statement_backend> impl_;
};

/// Resets a cached statement when the scope ends, so an exception never leaves it mid-step.
class statement_use {
 public:
  explicit statement_use(statement& s) : s_(s) {}
  ~statement_use() { s_.reset(); }
  statement_use(const statement_use&) = delete;
  statement_use& operator=(const statement_use&) = delete;
  statement* operator->() noexcept { return &s_; }
  statement& operator*() noexcept { return s_; }

 private:
  statement& s_;
};

/// Hashes std::string and std::string_view alike, so that maps keyed by std::string can be
/// searched with a view (no temporary string per lookup).
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// Ids remembered for one connection (e.g. of interned rows that are never deleted). Emptied
/// whenever a transaction of the connection rolls back, since ids created in it are gone.
using id_memo = std::unordered_map<std::string, std::int64_t, string_hash, std::equal_to<>>;

/// One connection. Move-only; closed on destruction. Not thread-safe: one per thread.
class database {
 public:
  database() = default;
  /// Opens an SQLite file with sqlite3_open_v2 flags; throws kb_error on failure.
  database(const std::string& path, int sqlite_flags);
  /// Connects to a PostgreSQL server (a postgresql:// or postgres:// URI); throws kb_error.
  /// `lock_timeout_ms`: how long a writer waits for the KB's write lock (like the busy timeout).
  static database connect_postgres(const std::string& uri, int lock_timeout_ms = 5000);
  database(database&&) noexcept = default;
  database& operator=(database&&) noexcept = default;

  dialect kind() const noexcept { return conn_->kind(); }
  /// Executes one or more statements without results or parameters.
  void exec(std::string_view sql) { conn_->exec(sql); }
  /// Prepares a fresh statement.
  statement prepare(std::string_view sql) { return statement(conn_->prepare(sql)); }
  /// Returns a statement prepared once per connection and kept; wrap in statement_use.
  statement& cached(std::string_view sql);
  /// The connection's memo of ids; see id_memo.
  id_memo& memo() noexcept { return *memo_; }
  /// Runs a query returning one integer (or fallback when there is no row / NULL).
  std::int64_t query_int(std::string_view sql, std::int64_t fallback = 0);
  /// Runs a query returning one text value (or empty).
  std::string query_text(std::string_view sql);

  std::int64_t last_insert_rowid() { return conn_->last_insert_id(); }
  int changes() const noexcept { return conn_->changes(); }
  bool read_only() const noexcept { return conn_->read_only(); }
  bool has_table(const std::string& name) { return conn_->has_table(name); }
  std::vector<std::string> columns_of(const std::string& table) { return conn_->columns_of(table); }
  /// Changes whenever any connection commits (see connection_backend::change_counter).
  std::int64_t change_counter() { return conn_->change_counter(); }
  /// After connection_lost: waits (bounded) for the server to come back; false for a file;
  /// throws kb_error (io) when the server stays away.
  bool reconnect() { return conn_->reconnect(); }
  /// The backend, for what only one backend offers (SQLite's busy timeout).
  connection_backend& backend() noexcept { return *conn_; }

 private:
  friend class transaction;
  explicit database(std::unique_ptr<connection_backend> conn) : conn_(std::move(conn)) {}
  // Heap-allocated so that its address, given to SQLite's rollback hook, survives moves.
  std::unique_ptr<id_memo> memo_ = std::make_unique<id_memo>();
  std::unique_ptr<connection_backend> conn_;
  // Statements must be released before the connection closes: members destroy in reverse.
  std::unordered_map<std::string, statement, string_hash, std::equal_to<>> cache_;
};

/// A write transaction that takes the KB's write lock up front (SQLite: BEGIN IMMEDIATE, so
/// that the busy timeout applies instead of SQLITE_BUSY on a read-to-write upgrade; PostgreSQL:
/// an advisory transaction lock, so that writers serialise as they do on a file). Rolls back
/// unless committed.
class transaction {
 public:
  explicit transaction(database& db);
  ~transaction();
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  void commit();

 private:
  database& db_;
  bool done_ = false;
};

/// Runs `body` in a write transaction and commits it. When a server connection drops, the
/// server rolled the transaction back: reconnect (bounded) and run the whole body again, so a
/// write is all or nothing. `body` must therefore start from scratch each time it is called.
inline constexpr int max_write_attempts = 5;

template <typename Body>
auto write_transaction(database& db, Body&& body) -> decltype(body()) {
  for (int attempt = 1;; ++attempt) {
    try {
      transaction tx(db);
      if constexpr (std::is_void_v<decltype(body())>) {
        body();
        tx.commit();
        return;
      } else {
        auto result = body();
        tx.commit();
        return result;
      }
    } catch (const connection_lost&) {
      // A file never loses its connection; a server gets a few chances (reconnect() itself
      // waits a bounded time and throws a clear error when the server stays away).
      if (attempt >= max_write_attempts || !db.reconnect()) throw;
    }
  }
}

/// A URI with its password (user:password@ or password=...) replaced by "***", for messages.
std::string redact(const std::string& uri);

/// True for a postgresql:// or postgres:// URI.
bool is_server_uri(std::string_view location) noexcept;

}  // namespace kblaster::kb::sql
