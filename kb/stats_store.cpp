// opt_stats rows: the one place that knows their columns.
#include "kb/stats_store.h"

#include <algorithm>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

json parameters_from_text(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json(nullptr);
}

json parameters_value(const search_credit& c) {
  return c.best_parameters.is_object() ? json(c.best_parameters.dump()) : json(nullptr);
}

}  // namespace

const std::vector<std::string>& stats_column_names() {
  static const std::vector<std::string> names{
      "attempts",        "compile_failures", "incorrect",     "successes",       "n_measured",
      "mean_log_speedup", "m2_log_speedup",  "last_used",     "credit_steps",    "credit_gains",
      "credit_new_bests", "credit_weight",   "credit_log_gain", "best_log_gain", "best_parameters"};
  return names;
}

std::string stats_select_list(const std::string& pattern) {
  std::string out;
  for (const auto& name : stats_column_names()) {
    std::string item = pattern;
    for (auto at = item.find("{}"); at != std::string::npos; at = item.find("{}", at + name.size()))
      item.replace(at, 2, name);
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

stats stats_from(const sql::statement& s, int first) {
  stats r;
  r.attempts = s.get_int(first);
  r.compile_failures = s.get_int(first + 1);
  r.incorrect = s.get_int(first + 2);
  r.successes = s.get_int(first + 3);
  r.n_measured = s.get_int(first + 4);
  r.mean_log_speedup = s.get_double(first + 5);
  r.m2_log_speedup = s.get_double(first + 6);
  if (!s.is_null(first + 7)) r.last_used = s.get_text(first + 7);
  r.credit.steps = s.get_int(first + 8);
  r.credit.gains = s.get_int(first + 9);
  r.credit.new_bests = s.get_int(first + 10);
  r.credit.weight = s.get_double(first + 11);
  r.credit.log_gain = s.get_double(first + 12);
  r.credit.best_log_gain = s.get_double(first + 13);
  if (!s.is_null(first + 14)) r.credit.best_parameters = parameters_from_text(s.get_text(first + 14));
  return r;
}

stats stats_from_row(const json& row) {
  stats s;
  if (row.is_null()) return s;
  s.attempts = row.at("attempts").get<std::int64_t>();
  s.compile_failures = row.at("compile_failures").get<std::int64_t>();
  s.incorrect = row.at("incorrect").get<std::int64_t>();
  s.successes = row.at("successes").get<std::int64_t>();
  s.n_measured = row.at("n_measured").get<std::int64_t>();
  s.mean_log_speedup = row.at("mean_log_speedup").get<double>();
  s.m2_log_speedup = row.at("m2_log_speedup").get<double>();
  if (row.at("last_used").is_string()) s.last_used = row.at("last_used").get<std::string>();
  s.credit.steps = row.value("credit_steps", std::int64_t{0});
  s.credit.gains = row.value("credit_gains", std::int64_t{0});
  s.credit.new_bests = row.value("credit_new_bests", std::int64_t{0});
  s.credit.weight = row.value("credit_weight", 0.0);
  s.credit.log_gain = row.value("credit_log_gain", 0.0);
  s.credit.best_log_gain = row.value("best_log_gain", 0.0);
  if (row.contains("best_parameters") && row["best_parameters"].is_string())
    s.credit.best_parameters = parameters_from_text(row["best_parameters"].get<std::string>());
  return s;
}

std::optional<stats> read_stats(sql::database& db, std::int64_t sid, std::int64_t tid, const std::string& arch) {
  auto& q = db.cached("SELECT " + stats_select_list() + " FROM opt_stats WHERE state_id = ? AND technique_id = ? AND arch = ?");
  sql::statement_use use(q);
  q.bind(1, sid).bind(2, tid).bind(3, arch);
  if (!q.step()) return std::nullopt;
  return stats_from(q, 0);
}

void upsert_stats(sql::database& db, std::int64_t sid, std::int64_t tid, const std::string& arch, const stats& s) {
  // An upsert updates the row in place; INSERT OR REPLACE would delete and re-insert it.
  static const std::string sql = [] {
    std::string placeholders, updates;
    for (const auto& name : stats_column_names()) {
      placeholders += ", ?";
      updates += (updates.empty() ? "" : ", ") + name + " = excluded." + name;
    }
    return "INSERT INTO opt_stats(state_id, technique_id, arch, " + stats_select_list() + ") VALUES(?, ?, ?" +
           placeholders + ") ON CONFLICT(state_id, technique_id, arch) DO UPDATE SET " + updates;
  }();
  auto& q = db.cached(sql);
  q.bind(1, sid).bind(2, tid).bind(3, arch).bind(4, s.attempts).bind(5, s.compile_failures);
  q.bind(6, s.incorrect).bind(7, s.successes).bind(8, s.n_measured).bind(9, s.mean_log_speedup);
  q.bind(10, s.m2_log_speedup).bind(11, s.last_used);
  q.bind(12, s.credit.steps).bind(13, s.credit.gains).bind(14, s.credit.new_bests).bind(15, s.credit.weight);
  q.bind(16, s.credit.log_gain).bind(17, s.credit.best_log_gain);
  if (s.credit.best_parameters.is_object()) q.bind(18, s.credit.best_parameters.dump());
  else q.bind_null(18);
  q.run();
}

const std::vector<std::string>& stats_log_columns() {
  static const std::vector<std::string> names = [] {
    auto v = stats_column_names();
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

json stats_log_values(const stats& s) {
  const json by_name{{"attempts", s.attempts},
                     {"compile_failures", s.compile_failures},
                     {"incorrect", s.incorrect},
                     {"successes", s.successes},
                     {"n_measured", s.n_measured},
                     {"mean_log_speedup", s.mean_log_speedup},
                     {"m2_log_speedup", s.m2_log_speedup},
                     {"last_used", s.last_used ? json(*s.last_used) : json(nullptr)},
                     {"credit_steps", s.credit.steps},
                     {"credit_gains", s.credit.gains},
                     {"credit_new_bests", s.credit.new_bests},
                     {"credit_weight", s.credit.weight},
                     {"credit_log_gain", s.credit.log_gain},
                     {"best_log_gain", s.credit.best_log_gain},
                     {"best_parameters", parameters_value(s.credit)}};
  json out = json::array();
  for (const auto& name : stats_log_columns()) out.push_back(by_name.at(name));
  return out;
}

}  // namespace kblaster::kb
