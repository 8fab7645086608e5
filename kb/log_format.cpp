// The update log's storage format: key and values as JSON arrays, table and column names
// interned in log_columns, and the conversion of version-3 logs.
#include "kb/log_format.h"

#include "kb/change_log.h"

#include <algorithm>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

[[noreturn]] void damaged(std::int64_t update_id, const std::string& why) {
  throw kb_error(error_kind::corrupt,
                 "update log entry of update " + std::to_string(update_id) + " is damaged: " + why);
}

bool is_key(const std::vector<std::string>& keys, const std::string& col) {
  return std::find(keys.begin(), keys.end(), col) != keys.end();
}

// The id of (table, names) in log_columns, adding it on first use. Remembered per connection
// (rows of log_columns are never deleted; the memo is emptied on rollback).
std::int64_t columns_id(sql::database& db, const std::string& table, const std::string& names) {
  std::string memo_key = "log_columns\n" + table + "\n" + names;
  auto& memo = db.memo();
  if (auto it = memo.find(memo_key); it != memo.end()) return it->second;
  std::int64_t id = 0;
  {
    auto& s = db.cached("SELECT id FROM log_columns WHERE table_name = ? AND names = ?");
    sql::statement_use use(s);
    s.bind(1, table).bind(2, names);
    if (s.step()) id = s.get_int(0);
  }
  if (!id) {
    db.cached("INSERT INTO log_columns(table_name, names) VALUES(?, ?)").bind(1, table).bind(2, names).run();
    id = db.last_insert_rowid();
  }
  memo.emplace(std::move(memo_key), id);
  return id;
}

json array_or_null(const sql::statement& s, int i, std::int64_t update_id) {
  if (s.is_null(i)) return nullptr;
  json v = json::parse(s.get_text(i), nullptr, false);
  if (!v.is_array()) damaged(update_id, "values are not a JSON array");
  return v;
}

// A whole row (an insert's after, a delete's before) as an object: key and values.
json whole_row(const logged_change& c, const json& values) {
  json row = c.key_object();
  for (std::size_t i = 0; i < c.columns.size(); ++i) row[c.columns[i]] = values[i];
  return row;
}

json values_object(const logged_change& c, const json& values) {
  json row = json::object();
  for (std::size_t i = 0; i < c.columns.size(); ++i) row[c.columns[i]] = values[i];
  return row;
}

}  // namespace

const char* logged_change::op() const noexcept {
  return before.is_null() ? "insert" : after.is_null() ? "delete" : "update";
}

json logged_change::key_object() const {
  const auto& keys = key_columns(table);
  json k = json::object();
  for (std::size_t i = 0; i < keys.size(); ++i) k[keys[i]] = key.at(i);
  return k;
}

std::optional<logged_change> diff_rows(const std::string& table, const json& key_object, const json& before,
                                       const json& after) {
  if (before == after) return std::nullopt;
  const auto& keys = key_columns(table);
  logged_change c{table, json::array(), {}, nullptr, nullptr};
  for (const auto& k : keys) c.key.push_back(key_object.at(k));
  if (before.is_null() || after.is_null()) {  // insert or delete: every non-key column
    const json& row = before.is_null() ? after : before;
    json values = json::array();
    for (const auto& [col, v] : row.items())
      if (!is_key(keys, col)) {
        c.columns.push_back(col);
        values.push_back(v);
      }
    (before.is_null() ? c.after : c.before) = std::move(values);
    return c;
  }
  c.before = json::array();
  c.after = json::array();
  for (const auto& [col, v] : after.items()) {
    const auto it = before.find(col);
    if (it != before.end() && *it == v) continue;
    c.columns.push_back(col);
    c.before.push_back(it != before.end() ? *it : json(nullptr));
    c.after.push_back(v);
  }
  return c;
}

void write_change(sql::database& db, std::int64_t update_id, std::int64_t seq, const logged_change& c) {
  const std::int64_t cols = columns_id(db, c.table, json(c.columns).dump());
  auto& s = db.cached(
      "INSERT INTO update_changes(update_id, seq, columns_id, row_key, before, after) VALUES(?, ?, ?, ?, ?, ?)");
  s.bind(1, update_id).bind(2, seq).bind(3, cols).bind(4, c.key.dump());
  c.before.is_null() ? s.bind_null(5) : s.bind(5, c.before.dump());
  c.after.is_null() ? s.bind_null(6) : s.bind(6, c.after.dump());
  s.run();
}

std::vector<logged_change> read_changes(sql::database& db, std::int64_t update_id) {
  auto s = db.prepare(
      "SELECT l.table_name, l.names, c.row_key, c.before, c.after FROM update_changes c "
      "LEFT JOIN log_columns l ON l.id = c.columns_id WHERE c.update_id = ? ORDER BY c.seq");
  s.bind(1, update_id);
  std::vector<logged_change> out;
  while (s.step()) {
    if (s.is_null(0)) damaged(update_id, "unknown column list");
    logged_change c;
    c.table = s.get_text(0);
    try {
      key_columns(c.table);
    } catch (const kb_error&) {
      damaged(update_id, "unknown table " + c.table);
    }
    const json names = json::parse(s.get_text(1), nullptr, false);
    if (!names.is_array()) damaged(update_id, "column list is not a JSON array");
    for (const auto& n : names) {
      if (!n.is_string()) damaged(update_id, "column list holds a non-string");
      c.columns.push_back(n.get<std::string>());
    }
    c.key = json::parse(s.get_text(2), nullptr, false);
    if (!c.key.is_array() || c.key.size() != key_columns(c.table).size())
      damaged(update_id, "row key does not match table " + c.table);
    c.before = array_or_null(s, 3, update_id);
    c.after = array_or_null(s, 4, update_id);
    if (c.before.is_null() && c.after.is_null()) damaged(update_id, "neither before nor after values");
    for (const json* v : {&c.before, &c.after})
      if (!v->is_null() && v->size() != c.columns.size()) damaged(update_id, "values do not match the column list");
    out.push_back(std::move(c));
  }
  return out;
}

json display(const logged_change& c) {
  const std::string op = c.op();
  json before = nullptr, after = nullptr;
  if (op == "insert") after = whole_row(c, c.after);
  else if (op == "delete") before = whole_row(c, c.before);
  else {
    before = values_object(c, c.before);
    after = values_object(c, c.after);
  }
  return {{"table", c.table}, {"key", c.key_object()}, {"op", op}, {"before", before}, {"after", after}};
}

void convert_v3_log(sql::database& db) {
  auto s = db.prepare(
      "SELECT update_id, seq, table_name, row_key, op, before, after FROM update_changes_v3 ORDER BY update_id, seq");
  while (s.step()) {
    const std::int64_t update_id = s.get_int(0);
    const std::string table = s.get_text(2), op = s.get_text(4);
    auto parse = [&](int i) {
      if (s.is_null(i)) return json(nullptr);
      json v = json::parse(s.get_text(i), nullptr, false);
      if (!v.is_object()) damaged(update_id, "column " + std::to_string(i) + " is not a JSON object");
      return v;
    };
    const json key = parse(3), before = parse(5), after = parse(6);
    try {
      const auto& keys = key_columns(table);
      logged_change c{table, json::array(), {}, nullptr, nullptr};
      for (const auto& k : keys) c.key.push_back(key.at(k));
      if (op == "insert" || op == "delete") {
        const json& row = op == "insert" ? after : before;
        if (!row.is_object()) damaged(update_id, op + " without its row");
        json values = json::array();
        for (const auto& [col, v] : row.items())
          if (!is_key(keys, col)) {
            c.columns.push_back(col);
            values.push_back(v);
          }
        (op == "insert" ? c.after : c.before) = std::move(values);
      } else if (op == "update") {
        if (!before.is_object() || !after.is_object()) damaged(update_id, "update without before and after");
        c.before = json::array();
        c.after = json::array();
        for (const auto& [col, v] : after.items()) {
          c.columns.push_back(col);
          c.before.push_back(before.value(col, json()));
          c.after.push_back(v);
        }
      } else {
        damaged(update_id, "unknown operation " + op);
      }
      write_change(db, update_id, s.get_int(1), c);
    } catch (const json::exception& e) {
      damaged(update_id, std::string("row key lacks a column (") + e.what() + ")");
    } catch (const kb_error& e) {
      if (e.kind() == error_kind::corrupt) throw;
      damaged(update_id, e.what());
    }
  }
  db.exec("DROP TABLE update_changes_v3");
}

}  // namespace kblaster::kb
