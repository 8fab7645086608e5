// A thin RAII wrapper over the SQLite C API: a connection, prepared statements and transactions.
// Every failing call throws kb_error whose kind is derived from SQLite's result code.
#pragma once

#include "kb/error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace kblaster::kb::sql {

/// Maps an SQLite result code to the kb error kind a user can act on.
error_kind kind_of(int sqlite_code) noexcept;

/// A prepared statement. Move-only; finalized on destruction. Not thread-safe.
class statement {
 public:
  statement() = default;
  statement(sqlite3* db, std::string_view sql);

  /// Binds by 1-based index. nullopt binds NULL.
  statement& bind(int index, std::int64_t value);
  statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  statement& bind(int index, double value);
  statement& bind(int index, std::string_view value);
  statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  statement& bind_null(int index);
  template <typename T>
  statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  /// Advances; true while a row is available, false when done.
  bool step();
  /// Runs a statement that returns no rows (or ignores them), then resets it.
  void run();
  /// Resets for re-use and clears bindings.
  void reset() noexcept;

  int column_count() const noexcept;
  std::string column_name(int i) const;
  bool is_null(int i) const noexcept;
  /// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  int column_type(int i) const noexcept;
  std::int64_t get_int(int i) const noexcept;
  double get_double(int i) const noexcept;
  std::string get_text(int i) const;
  std::optional<double> get_opt_double(int i) const;
  std::optional<std::int64_t> get_opt_int(int i) const;

 private:
  struct finalizer {
    void operator()(sqlite3_stmt* s) const noexcept;
  };
  std::unique_ptr<sqlite3_stmt, finalizer> stmt_;
  sqlite3* db_ = nullptr;
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
  /// Opens with sqlite3_open_v2 flags; throws kb_error on failure.
  database(const std::string& path, int flags);
  database(database&&) noexcept = default;
  database& operator=(database&&) noexcept = default;

  /// Executes one or more statements without results.
  void exec(std::string_view sql);
  /// Prepares a fresh statement.
  statement prepare(std::string_view sql);
  /// Returns a statement prepared once per connection and kept; wrap in statement_use.
  statement& cached(std::string_view sql);
  /// The connection's memo of ids; see id_memo.
  id_memo& memo() noexcept { return *memo_; }
  /// Runs a query returning one integer (or fallback when there is no row / NULL).
  std::int64_t query_int(std::string_view sql, std::int64_t fallback = 0);
  /// Runs a query returning one text value (or empty).
  std::string query_text(std::string_view sql);

  std::int64_t last_insert_rowid() const noexcept;
  int changes() const noexcept;
  bool read_only() const noexcept;
  sqlite3* handle() const noexcept { return db_.get(); }

 private:
  struct closer {
    void operator()(sqlite3* db) const noexcept;
  };
  // Heap-allocated so that its address, given to SQLite's rollback hook, survives moves.
  std::unique_ptr<id_memo> memo_ = std::make_unique<id_memo>();
  std::unique_ptr<sqlite3, closer> db_;
  // Statements must be finalized before the connection closes: members destroy in reverse.
  std::unordered_map<std::string, statement, string_hash, std::equal_to<>> cache_;
};

/// A write transaction (BEGIN IMMEDIATE, so that the write lock is taken up front and the busy
/// timeout applies, instead of failing with SQLITE_BUSY on a read-to-write upgrade). Rolls back
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

/// Throws kb_error for a non-OK result code, with SQLite's message for the connection.
void check(sqlite3* db, int code, std::string_view what);

}  // namespace kblaster::kb::sql
