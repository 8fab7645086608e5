// Row snapshots, diffs and reverts for the update log. Table and column names come from a fixed
// list and from the table's own columns, never from the log's text, so a damaged log cannot inject SQL.
#include "kb/change_log.h"

#include "kb/attribution.h"
#include "support/time.h"

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
    case sql::value_type::integer: return s.get_int(i);
    case sql::value_type::real: return s.get_double(i);
    case sql::value_type::null: return nullptr;
    case sql::value_type::text: break;
  }
  return s.get_text(i);
}

std::set<std::string> columns_of(sql::database& db, const std::string& table) {
  const auto names = db.columns_of(table);
  return {names.begin(), names.end()};
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
  if (auto c = diff_rows(table, key, before, after)) changes_.push_back(std::move(*c));
}

void change_log::record(logged_change c) {
  if (!c.before.is_null() && !c.after.is_null() && c.columns.empty()) return;
  changes_.push_back(std::move(c));
}

bool change_log::touched(const std::string& table) const {
  return std::any_of(changes_.begin(), changes_.end(), [&](const logged_change& c) { return c.table == table; });
}

std::int64_t change_log::commit(const update_cause& cause) {
  if (changes_.empty()) return 0;
  auto& u = db_.cached(
      "INSERT INTO updates(created_at, cause, detail, attempt_ids, taught_by) VALUES(?, ?, ?, ?, ?)");
  u.bind(1, support::utc_now(support::timestamp_precision::milliseconds)).bind(2, cause.kind).bind(3, cause.detail).bind(4, json(cause.attempt_ids).dump());
  u.bind(5, current_user());
  u.run();
  const std::int64_t id = db_.last_insert_rowid();
  for (std::size_t i = 0; i < changes_.size(); ++i) write_change(db_, id, static_cast<std::int64_t>(i), changes_[i]);
  changes_.clear();
  return id;
}

namespace {

// Later, still active updates that touched the same row: named in a conflict message.
std::string later_updates(sql::database& db, std::int64_t id, const std::string& table, const std::string& key) {
  auto s = db.prepare(
      "SELECT DISTINCT c.update_id FROM update_changes c JOIN updates u ON u.id = c.update_id "
      "JOIN log_columns l ON l.id = c.columns_id "
      "WHERE c.update_id > ? AND l.table_name = ? AND c.row_key = ? AND u.reverted_by IS NULL "
      "ORDER BY c.update_id DESC");
  s.bind(1, id).bind(2, table).bind(3, key);
  std::string ids;
  while (s.step()) ids += (ids.empty() ? "" : ", ") + std::to_string(s.get_int(0));
  return ids.empty() ? "none recorded" : ids;
}

}  // namespace

void revert_changes(sql::database& db, std::int64_t id, change_log& log) {
  auto changes = read_changes(db, id);
  std::reverse(changes.begin(), changes.end());
  for (const auto& c : changes) {
    const auto& keys = key_columns(c.table);
    const json key = c.key_object();
    const json current = log.snapshot(c.table, key);
    const auto conflict = [&] {
      throw kb_error(error_kind::conflict,
                     "cannot revert update " + std::to_string(id) + ": " + c.table + " row " + key.dump() +
                         " was changed since by update(s) " + later_updates(db, id, c.table, c.key.dump()) +
                         "; revert those first");
    };
    const auto cols = columns_of(db, c.table);
    for (const auto& col : c.columns)
      if (!cols.count(col)) throw kb_error(error_kind::corrupt, "update log names unknown column " + col);
    // The logged values must still be there: otherwise a later update changed them.
    const auto unchanged = [&](const json& values) {
      for (std::size_t i = 0; i < c.columns.size(); ++i)
        if (current.value(c.columns[i], json()) != values[i]) return false;
      return true;
    };
    const std::string op = c.op();
    if (op == "insert") {
      if (current.is_null() || !unchanged(c.after)) conflict();
      log.track(c.table, key, [&] {
        auto s = db.prepare("DELETE FROM " + c.table + where_clause(keys));
        for (std::size_t i = 0; i < keys.size(); ++i) bind_json(s, static_cast<int>(i + 1), c.key[i]);
        s.run();
      });
    } else if (op == "update") {
      if (current.is_null() || !unchanged(c.after)) conflict();
      std::string set;
      for (const auto& col : c.columns) set += (set.empty() ? "" : ", ") + col + " = ?";
      log.track(c.table, key, [&] {
        auto s = db.prepare("UPDATE " + c.table + " SET " + set + where_clause(keys));
        int i = 1;
        for (const auto& v : c.before) bind_json(s, i++, v);
        for (const auto& k : c.key) bind_json(s, i++, k);
        s.run();
      });
    } else {  // delete
      if (!current.is_null()) conflict();
      std::string names, marks;
      for (const auto& col : keys) names += (names.empty() ? "" : ", ") + col;
      for (const auto& col : c.columns) names += ", " + col;
      for (std::size_t i = 0; i < keys.size() + c.columns.size(); ++i) marks += i ? ", ?" : "?";
      log.track(c.table, key, [&] {
        auto s = db.prepare("INSERT INTO " + c.table + "(" + names + ") VALUES(" + marks + ")");
        int i = 1;
        for (const auto& k : c.key) bind_json(s, i++, k);
        for (const auto& v : c.before) bind_json(s, i++, v);
        s.run();
      });
    }
  }
}

}  // namespace kblaster::kb
