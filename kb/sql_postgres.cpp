// The PostgreSQL backend of the connection layer, through libpq. The KB's SQL is SQLite's
// dialect kept to what both engines understand; translate() rewrites the spellings that differ.
// Statements run with PQexecParams (types follow the bound values, so one statement serves
// every binding); writers serialise on an advisory lock as they do on SQLite's write lock; a
// dropped connection is re-established, transparently outside a transaction, and inside one by
// write_transaction() running the whole transaction again.
#include "kb/sql.h"
#include "kb/sql_postgres.h"

#include <libpq-fe.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace kblaster::kb::sql {
namespace {

// Type oids of pg_type.h (stable across releases).
constexpr Oid bool_oid = 16, int8_oid = 20, int2_oid = 21, int4_oid = 23, float4_oid = 700, float8_oid = 701,
              numeric_oid = 1700;

// The advisory lock every KB writer takes: "KBLS", the SQLite files' application id.
constexpr const char* write_lock_sql = "SELECT pg_advisory_xact_lock(1262636115)";

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// True when `word` starts at `i` as a whole word.
bool word_at(std::string_view sql, std::size_t i, std::string_view word) {
  if (sql.substr(i, word.size()) != word) return false;
  if (i > 0 && word_char(sql[i - 1])) return false;
  const auto end = i + word.size();
  return end >= sql.size() || !word_char(sql[end]);
}

// Copies a quoted literal or identifier starting at sql[i] (a doubled quote escapes it).
std::size_t copy_quoted(std::string_view sql, std::size_t i, std::string& out) {
  const char q = sql[i];
  out += q;
  for (++i; i < sql.size(); ++i) {
    out += sql[i];
    if (sql[i] == q) {
      if (i + 1 < sql.size() && sql[i + 1] == q) {
        out += q;
        ++i;
      } else {
        return i + 1;
      }
    }
  }
  return i;
}

// Rewrites one placeholder at sql[i] ('?' or '?NNN') as $n. Returns the index after it.
std::size_t translate_placeholder(std::string_view sql, std::size_t i, int& next, std::string& out) {
  std::size_t j = i + 1;
  while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
  int n = next;
  if (j > i + 1) std::from_chars(sql.data() + i + 1, sql.data() + j, n);
  next = std::max(next, n + 1);
  out += '$' + std::to_string(n);
  return j;
}

struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, pg_result_deleter>;

error_kind kind_of_sqlstate(const char* state) {
  const std::string_view s = state ? state : "";
  if (s.starts_with("08")) return error_kind::io;
  if (s.starts_with("23") || s.starts_with("22")) return error_kind::invalid_argument;
  if (s == "55P03" || s == "40P01" || s == "40001" || s == "57014") return error_kind::busy;
  if (s == "25006") return error_kind::read_only;
  if (s.starts_with("28") || s.starts_with("3D")) return error_kind::cannot_open;
  if (s.starts_with("53") || s.starts_with("58")) return error_kind::io;
  return error_kind::internal;
}

// One line of libpq's message, without its trailing newline.
std::string message_of(const PGconn* conn, const PGresult* r) {
  std::string m = r ? PQresultErrorMessage(r) : "";
  if (m.empty() && conn) m = PQerrorMessage(conn);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

int reconnect_window_seconds() {
  if (const char* v = std::getenv("KBLASTER_KB_RECONNECT_SECONDS"); v && *v) return std::max(0, std::atoi(v));
  return 30;
}

class pg_connection;

class pg_statement final : public statement_backend {
 public:
  pg_statement(pg_connection& conn, std::string sql) : conn_(conn), sql_(std::move(sql)) {}

  void bind_int(int index, std::int64_t value) override { set(index, std::to_string(value), int8_oid); }
  void bind_double(int index, double value) override {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, value);  // shortest exact form
    set(index, std::string(buf, r.ptr), float8_oid);
  }
  void bind_text(int index, std::string_view value) override { set(index, std::string(value), 0); }
  void bind_null(int index) override { set(index, std::nullopt, 0); }

  bool step() override;
  void reset() noexcept override {
    result_.reset();
    row_ = -1;
    values_.clear();
    types_.clear();
  }

  int column_count() const noexcept override { return result_ ? PQnfields(result_.get()) : 0; }
  std::string column_name(int i) const override { return PQfname(result_.get(), i); }
  value_type column_type(int i) const noexcept override {
    if (PQgetisnull(result_.get(), row_, i)) return value_type::null;
    switch (PQftype(result_.get(), i)) {
      case bool_oid:
      case int2_oid:
      case int4_oid:
      case int8_oid: return value_type::integer;
      case float4_oid:
      case float8_oid:
      case numeric_oid: return value_type::real;
      default: return value_type::text;
    }
  }
  std::int64_t get_int(int i) const noexcept override {
    const char* v = PQgetvalue(result_.get(), row_, i);
    if (v[0] == 't' && v[1] == '\0') return 1;  // a boolean
    return std::strtoll(v, nullptr, 10);
  }
  double get_double(int i) const noexcept override { return std::strtod(PQgetvalue(result_.get(), row_, i), nullptr); }
  std::string get_text(int i) const override {
    return std::string(PQgetvalue(result_.get(), row_, i), static_cast<std::size_t>(PQgetlength(result_.get(), row_, i)));
  }

 private:
  void set(int index, std::optional<std::string> value, Oid type) {
    const auto at = static_cast<std::size_t>(index - 1);
    if (values_.size() <= at) {
      values_.resize(at + 1);
      types_.resize(at + 1, 0);
    }
    values_[at] = std::move(value);
    types_[at] = type;
  }

  pg_connection& conn_;
  std::string sql_;
  std::vector<std::optional<std::string>> values_;
  std::vector<Oid> types_;
  result_ptr result_;
  int row_ = -1;
};

class pg_connection final : public connection_backend {
 public:
  pg_connection(const std::string& uri, int lock_timeout_ms)
      : uri_(uri), shown_(redact(uri)), lock_timeout_ms_(lock_timeout_ms) {
    conn_.reset(PQconnectdb(uri.c_str()));
    if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK)
      throw kb_error(error_kind::cannot_open,
                     "cannot reach the KB server " + shown_ + ": " + message_of(conn_.get(), nullptr));
    configure_session();
  }

  dialect kind() const noexcept override { return dialect::postgres; }

  // Without parameters, through the simple protocol: it runs several statements (a migration).
  void exec(std::string_view sql) override { execute(translate_for_postgres(sql), {}, {}, true); }
  std::unique_ptr<statement_backend> prepare(std::string_view sql) override {
    return std::make_unique<pg_statement>(*this, translate_for_postgres(sql));
  }
  std::int64_t last_insert_id() override {
    // lastval(): the value the session's last nextval() gave, i.e. the identity column's.
    const auto r = execute("SELECT lastval()", {}, {});
    return std::strtoll(PQgetvalue(r.get(), 0, 0), nullptr, 10);
  }
  int changes() const noexcept override { return changes_; }
  bool read_only() const noexcept override { return false; }

  void begin_write() override {
    execute("BEGIN", {}, {});
    in_transaction_ = true;
    execute(write_lock_sql, {}, {});
  }
  void commit() override {
    execute("COMMIT", {}, {});
    in_transaction_ = false;
  }
  void rollback() noexcept override {
    const bool was = in_transaction_;
    in_transaction_ = false;
    if (!was || PQstatus(conn_.get()) != CONNECTION_OK) return;
    result_ptr r(PQexec(conn_.get(), "ROLLBACK"));
  }

  bool has_table(const std::string& name) override {
    pg_statement s(*this, "SELECT count(*) FROM information_schema.tables "
                          "WHERE table_schema = current_schema() AND table_name = $1");
    s.bind_text(1, name);
    return s.step() && s.get_int(0) > 0;
  }
  std::vector<std::string> columns_of(const std::string& table) override {
    pg_statement s(*this, "SELECT column_name FROM information_schema.columns "
                          "WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position");
    s.bind_text(1, table);
    std::vector<std::string> cols;
    while (s.step()) cols.push_back(s.get_text(0));
    return cols;
  }
  // The server's WAL insert position: it moves with every change any session makes, this
  // one's uncommitted ones included. Coarse (other databases of the cluster move it too), but
  // a spurious change only costs the caller a reload.
  std::int64_t change_counter() override {
    const auto r = execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint", {}, {});
    return std::strtoll(PQgetvalue(r.get(), 0, 0), nullptr, 10);
  }

  bool reconnect() override {
    const int window = reconnect_window_seconds();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(window);
    auto pause = std::chrono::milliseconds(100);
    in_transaction_ = false;
    for (;;) {
      PQreset(conn_.get());
      if (PQstatus(conn_.get()) == CONNECTION_OK) {
        configure_session();
        return true;
      }
      if (std::chrono::steady_clock::now() + pause > deadline)
        throw kb_error(error_kind::io, "the KB server " + shown_ + " is unreachable and did not come back within " +
                                           std::to_string(window) + " s (KBLASTER_KB_RECONNECT_SECONDS): " +
                                           message_of(conn_.get(), nullptr) + "; nothing of the interrupted write was kept");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(2000));
    }
  }

  // Runs translated SQL with text parameters. A dropped connection outside a transaction is
  // re-established and the statement run again; inside one it throws connection_lost.
  result_ptr execute(const std::string& sql, const std::vector<std::optional<std::string>>& values,
                     const std::vector<Oid>& types, bool several = false) {
    std::vector<const char*> raw;
    raw.reserve(values.size());
    for (const auto& v : values) raw.push_back(v ? v->c_str() : nullptr);
    for (int tries = 0;; ++tries) {
      result_ptr r(several ? PQexec(conn_.get(), sql.c_str())
                           : PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(raw.size()),
                                          types.empty() ? nullptr : types.data(), raw.data(), nullptr, nullptr, 0));
      const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
      if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        changes_ = std::atoi(PQcmdTuples(r.get()));
        return r;
      }
      if (PQstatus(conn_.get()) != CONNECTION_OK) {
        const std::string why = "lost the connection to the KB server " + shown_ + ": " + message_of(conn_.get(), r.get());
        if (in_transaction_ || sql == "COMMIT") {
          in_transaction_ = false;
          throw connection_lost(why);
        }
        if (tries == 0 && reconnect()) continue;
        throw kb_error(error_kind::io, why);
      }
      throw kb_error(kind_of_sqlstate(PQresultErrorField(r.get(), PG_DIAG_SQLSTATE)),
                     "KB server " + shown_ + ": " + message_of(conn_.get(), r.get()));
    }
  }

 private:
  void configure_session() {
    // Notices ("already exists, skipping") are not errors; libpq would print them to stderr.
    PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr);
    execute("SET lock_timeout = " + std::to_string(std::max(1, lock_timeout_ms_)), {}, {});
  }

  struct finisher {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
  };
  std::string uri_, shown_;
  int lock_timeout_ms_;
  std::unique_ptr<PGconn, finisher> conn_;
  bool in_transaction_ = false;
  int changes_ = 0;
};

bool pg_statement::step() {
  if (!result_) {
    result_ = conn_.execute(sql_, values_, types_);
    row_ = -1;
  }
  return ++row_ < PQntuples(result_.get());
}

}  // namespace

std::string translate_for_postgres(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 1;
  for (std::size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {
      i = copy_quoted(sql, i, out);
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;  // comments go: they may hold any word
    } else if (c == '?') {
      i = translate_placeholder(sql, i, next, out);
    } else if (word_at(sql, i, "INTEGER PRIMARY KEY")) {
      out += "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
      i += 19;
    } else if (word_at(sql, i, "INTEGER")) {
      out += "BIGINT";  // SQLite's integers are 64-bit (cycle counts exceed PostgreSQL's INTEGER)
      i += 7;
    } else if (word_at(sql, i, "REAL")) {
      out += "DOUBLE PRECISION";
      i += 4;
    } else if (word_at(sql, i, "WITHOUT ROWID")) {
      i += 13;  // every PostgreSQL table is a heap with its primary key's index
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

database database::connect_postgres(const std::string& uri, int lock_timeout_ms) {
  return database(std::make_unique<pg_connection>(uri, lock_timeout_ms));
}

}  // namespace kblaster::kb::sql
