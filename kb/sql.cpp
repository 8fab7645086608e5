// The backend-neutral parts of the connection layer (kb/sql.h): statements' helpers, the
// statement cache, transactions, and what a server location looks like.
#include "kb/sql.h"

namespace kblaster::kb::sql {

void statement::run() {
  statement_use use(*this);
  while (step()) {
  }
}

std::optional<double> statement::get_opt_double(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_double(i);
}
std::optional<std::int64_t> statement::get_opt_int(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_int(i);
}

statement& database::cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(std::string(sql), prepare(sql)).first;
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

transaction::transaction(database& db) : db_(db) { db_.conn_->begin_write(); }
transaction::~transaction() {
  if (done_) return;
  db_.conn_->rollback();
  db_.memo_->clear();  // ids created in the transaction are gone
}
void transaction::commit() {
  db_.conn_->commit();
  done_ = true;
}


bool is_server_uri(std::string_view location) noexcept {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string redact(const std::string& uri) {
  std::string out = uri;
  // user:password@host
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto at = out.find('@', scheme + 3);
    const auto colon = out.find(':', scheme + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at)
      out.replace(colon + 1, at - colon - 1, "***");
  }
  // ?password=... or &password=...
  for (std::size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const auto start = p + 9;
    const auto end = out.find_first_of("& ", start);
    out.replace(start, (end == std::string::npos ? out.size() : end) - start, "***");
  }
  return out;
}

}  // namespace kblaster::kb::sql
