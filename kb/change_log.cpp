// Row snapshots, diffs and reverts for the update log. Table and column names come from a fixed
// list and from PRAGMA table_info, never from the log's text, so a damaged log cannot inject SQL.
#include "kb/change_log.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

const std::map<std::string, std::vector<std::string>>& tables() {
  static const std::map<std::string, std::vector<std::string>> t{
      {"states", {"id"}},
      {"techniques", {"id"}},
      {"optimizations", {"state_id", "technique_id"}},
      {"opt_stats", {"state_id", "technique_id", "arch"}},
      {"lessons", {"id"}},
      {"transitions", {"from_state_id", "technique_id", "to_state_id"}},
  };
  return t;
}

void bind_json(sql::statement& s, int index, const json& v) {
  if (v.is_null()) s.bind_null(index);
  else if (v.is_number_integer()) s.bind(index, v.get<std::int64_t>());
  else if (v.is_number()) s.bind(index, v.get<double>());
  else if (v.is_string()) s.bind(index, v.get<std::string>());
  else if (v.is_boolean()) s.bind(index, v.get<bool>() ? 1 : 0);
  else s.bind(index, v.dump());
}

json column_json(const sql::statement& s, int i) {
  switch (s.column_type(i)) {
    case SQLITE_INTEGER: return s.get_int(i);
    case SQLITE_FLOAT: return s.get_double(i);
    case SQLITE_NULL: return nullptr;
    default: return s.get_text(i);
  }
}

std::set<std::string> columns_of(sql::database& db, const std::string& table) {
  std::set<std::string> cols;
  auto s = db.prepare("PRAGMA table_info(" + table + ")");
  while (s.step()) cols.insert(s.get_text(1));
  return cols;
}

std::string where_clause(const std::vector<std::string>& keys) {
  std::string w;
  for (std::size_t i = 0; i < keys.size(); ++i) w += (i ? " AND " : " WHERE ") + keys[i] + " = ?";
  return w;
}

}  // namespace

const std::vector<std::string>& key_columns(const std::string& table) {
  auto it = tables().find(table);
  if (it == tables().end()) throw kb_error(error_kind::internal, "update log names unknown table " + table);
  return it->second;
}

std::string now_iso8601() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

json change_log::snapshot(const std::string& table, const json& key) {
  const auto& keys = key_columns(table);
  auto& s = db_.cached("SELECT * FROM " + table + where_clause(keys));
  sql::statement_use use(s);
  for (std::size_t i = 0; i < keys.size(); ++i) bind_json(s, static_cast<int>(i + 1), key.at(keys[i]));
  if (!s.step()) return nullptr;
  json row = json::object();
  for (int i = 0; i < s.column_count(); ++i) row[s.column_name(i)] = column_json(s, i);
  return row;
}

void change_log::track(const std::string& table, const json& key, const std::function<void()>& mutate) {
  json before = snapshot(table, key);
  mutate();
  record(table, key, before, snapshot(table, key));
}

void change_log::record(const std::string& table, const json& key, const json& before, const json& after) {
  if (before == after) return;
  change c{table, key.dump(), "", nullptr, nullptr};
  if (before.is_null()) {
    c.op = "insert";
    c.after = after;
  } else if (after.is_null()) {
    c.op = "delete";
    c.before = before;
  } else {
    c.op = "update";
    c.before = json::object();
    c.after = json::object();
    for (const auto& [col, v] : after.items())
      if (!before.contains(col) || before[col] != v) {
        c.before[col] = before.contains(col) ? before[col] : json(nullptr);
        c.after[col] = v;
      }
  }
  changes_.push_back(std::move(c));
}

bool change_log::touched(const std::string& table) const {
  return std::any_of(changes_.begin(), changes_.end(), [&](const change& c) { return c.table == table; });
}

std::int64_t change_log::commit(const update_cause& cause) {
  if (changes_.empty()) return 0;
  auto& u = db_.cached(
      "INSERT INTO updates(created_at, cause, detail, attempt_ids) VALUES(?, ?, ?, ?)");
  u.bind(1, now_iso8601()).bind(2, cause.kind).bind(3, cause.detail).bind(4, json(cause.attempt_ids).dump());
  u.run();
  const std::int64_t id = db_.last_insert_rowid();
  auto& c = db_.cached(
      "INSERT INTO update_changes(update_id, seq, table_name, row_key, op, before, after) "
      "VALUES(?, ?, ?, ?, ?, ?, ?)");
  for (std::size_t i = 0; i < changes_.size(); ++i) {
    const auto& ch = changes_[i];
    c.bind(1, id).bind(2, static_cast<std::int64_t>(i)).bind(3, ch.table).bind(4, ch.key).bind(5, ch.op);
    ch.before.is_null() ? c.bind_null(6) : c.bind(6, ch.before.dump());
    ch.after.is_null() ? c.bind_null(7) : c.bind(7, ch.after.dump());
    c.run();
  }
  changes_.clear();
  return id;
}

namespace {

// Later, still active updates that touched the same row: named in a conflict message.
std::string later_updates(sql::database& db, std::int64_t id, const std::string& table, const std::string& key) {
  auto s = db.prepare(
      "SELECT DISTINCT c.update_id FROM update_changes c JOIN updates u ON u.id = c.update_id "
      "WHERE c.update_id > ? AND c.table_name = ? AND c.row_key = ? AND u.reverted_by IS NULL "
      "ORDER BY c.update_id DESC");
  s.bind(1, id).bind(2, table).bind(3, key);
  std::string ids;
  while (s.step()) ids += (ids.empty() ? "" : ", ") + std::to_string(s.get_int(0));
  return ids.empty() ? "none recorded" : ids;
}

}  // namespace

void revert_changes(sql::database& db, std::int64_t id, change_log& log) {
  struct row {
    std::string table, key, op;
    json before, after;
  };
  std::vector<row> rows;
  {
    auto s = db.prepare(
        "SELECT table_name, row_key, op, before, after FROM update_changes WHERE update_id = ? "
        "ORDER BY seq DESC");
    s.bind(1, id);
    while (s.step())
      rows.push_back({s.get_text(0), s.get_text(1), s.get_text(2),
                      s.is_null(3) ? json(nullptr) : json::parse(s.get_text(3)),
                      s.is_null(4) ? json(nullptr) : json::parse(s.get_text(4))});
  }
  for (const auto& r : rows) {
    const auto& keys = key_columns(r.table);
    const json key = json::parse(r.key);
    const json current = log.snapshot(r.table, key);
    const auto conflict = [&] {
      throw kb_error(error_kind::conflict,
                     "cannot revert update " + std::to_string(id) + ": " + r.table + " row " + r.key +
                         " was changed since by update(s) " + later_updates(db, id, r.table, r.key) +
                         "; revert those first");
    };
    const auto cols = columns_of(db, r.table);
    if (r.op == "insert") {
      if (current != r.after) conflict();
      log.track(r.table, key, [&] {
        auto s = db.prepare("DELETE FROM " + r.table + where_clause(keys));
        for (std::size_t i = 0; i < keys.size(); ++i) bind_json(s, static_cast<int>(i + 1), key.at(keys[i]));
        s.run();
      });
    } else if (r.op == "update") {
      if (current.is_null()) conflict();
      std::string set;
      std::vector<json> values;
      for (const auto& [col, v] : r.after.items()) {
        if (!cols.count(col)) throw kb_error(error_kind::corrupt, "update log names unknown column " + col);
        if (current.value(col, json()) != v) conflict();
        set += (set.empty() ? "" : ", ") + col + " = ?";
        values.push_back(r.before.value(col, json()));
      }
      log.track(r.table, key, [&] {
        auto s = db.prepare("UPDATE " + r.table + " SET " + set + where_clause(keys));
        int i = 1;
        for (const auto& v : values) bind_json(s, i++, v);
        for (const auto& k : keys) bind_json(s, i++, key.at(k));
        s.run();
      });
    } else if (r.op == "delete") {
      if (!current.is_null()) conflict();
      std::string names, marks;
      std::vector<json> values;
      for (const auto& [col, v] : r.before.items()) {
        if (!cols.count(col)) throw kb_error(error_kind::corrupt, "update log names unknown column " + col);
        names += (names.empty() ? "" : ", ") + col;
        marks += marks.empty() ? "?" : ", ?";
        values.push_back(v);
      }
      log.track(r.table, key, [&] {
        auto s = db.prepare("INSERT INTO " + r.table + "(" + names + ") VALUES(" + marks + ")");
        int i = 1;
        for (const auto& v : values) bind_json(s, i++, v);
        s.run();
      });
    } else {
      throw kb_error(error_kind::corrupt, "update log has unknown operation " + r.op);
    }
  }
}

}  // namespace kblaster::kb
