// The replay buffer: storing an attempt applies its numeric update (statistics of the state and
// technique for its architecture and for all, and the observed transition) in the same
// transaction, logged as one update.
#include "kb/attribution.h"
#include "kb/change_log.h"
#include "support/time.h"
#include "kb/knowledge_base.h"
#include "kb/stats_math.h"
#include "kb/stats_store.h"

#include <cmath>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

// The logged change of a row from values the caller read and wrote: every column for an
// insert (before is null), only those that differ for an update.
logged_change values_change(std::string table, json key, const std::vector<std::string>& columns,
                            const json& before, json after) {
  logged_change c{std::move(table), std::move(key), {}, nullptr, nullptr};
  if (before.is_null()) {
    c.columns = columns;
    c.after = std::move(after);
    return c;
  }
  c.before = json::array();
  c.after = json::array();
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (before[i] != after[i]) {
      c.columns.push_back(columns[i]);
      c.before.push_back(before[i]);
      c.after.push_back(std::move(after[i]));
    }
  return c;
}

void validate(const attempt& a) {
  auto bad = [](const std::string& m) { throw kb_error(error_kind::invalid_argument, "attempt: " + m); };
  if (a.task.empty()) bad("task is empty");
  if (a.state_before.empty()) bad("state_before is empty");
  if (a.technique.empty()) bad("technique is empty");
  if (a.correct && !a.compile_ok) bad("cannot be correct without compiling");
  if (a.correct && !a.measured_speedup) bad("a correct attempt needs a measured speedup");
  if (a.measured_speedup && !(std::isfinite(*a.measured_speedup) && *a.measured_speedup > 0))
    bad("measured speedup must be a positive number");
  if (a.predicted_speedup && !std::isfinite(*a.predicted_speedup)) bad("predicted speedup must be finite");
}

}  // namespace

std::int64_t knowledge_base::record_attempt(const attempt& a) {
  require_writable();
  validate(a);
  return sql::write_transaction(*db_, [&] { return insert_attempt(a); });
}

std::vector<std::int64_t> knowledge_base::record_attempts(const std::vector<attempt>& batch) {
  require_writable();
  for (const auto& a : batch) validate(a);
  return sql::write_transaction(*db_, [&] {
    std::vector<std::int64_t> ids;
    ids.reserve(batch.size());
    for (const auto& a : batch) ids.push_back(insert_attempt(a));
    return ids;
  });
}

std::int64_t knowledge_base::insert_attempt(const attempt& a) {
  const std::string now = support::utc_now(support::timestamp_precision::milliseconds);
  change_log log(*db_);
  const auto before_id = ensure_state(a.state_before, log);
  // 0 when the state after is unknown (SQLite rowids start at 1).
  const std::int64_t after_id = a.state_after.empty() ? 0 : ensure_state(a.state_after, log);
  const auto tid = ensure_technique(a.technique, log);

  // A technique tried in a state becomes one of the state's known optimizations.
  {
    auto& ins = db_->cached(
        "INSERT INTO optimizations(state_id, technique_id, prior_speedup) VALUES(?, ?, 1.0) ON CONFLICT DO NOTHING");
    ins.bind(1, before_id).bind(2, tid).run();
    if (db_->changes() == 1) {
      static const std::vector<std::string> columns{"note", "prior_speedup"};
      log.record(values_change("optimizations", json::array({before_id, tid}), columns, nullptr,
                               json::array({"", 1.0})));
    }
  }

  auto& ins = db_->cached(
      "INSERT INTO attempts(task, trajectory, iteration, step, state_before_id, state_after_id, "
      "technique_id, predicted_speedup, measured_speedup, compile_ok, correct, runtime_ms, gpu_name, "
      "arch, started_at, finished_at, elapsed_cycles, tokens_by_role, code_hash, parameters, credits_step, new_best, "
      "taught_by) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, a.task).bind(2, a.trajectory).bind(3, a.iteration).bind(4, a.step).bind(5, before_id);
  after_id ? ins.bind(6, after_id) : ins.bind_null(6);
  ins.bind(7, tid).bind(8, a.predicted_speedup).bind(9, a.measured_speedup);
  ins.bind(10, a.compile_ok ? 1 : 0).bind(11, a.correct ? 1 : 0).bind(12, a.runtime_ms);
  ins.bind(13, a.gpu_name).bind(14, a.arch).bind(15, a.started_at.empty() ? now : a.started_at);
  ins.bind(16, a.finished_at.empty() ? now : a.finished_at).bind(17, a.elapsed_cycles);
  ins.bind(18, json(a.tokens_by_role).dump()).bind(19, a.code_hash);
  ins.bind(20, (a.parameters.is_object() ? a.parameters : json::object()).dump());
  ins.bind(21, a.credits_step ? 1 : 0).bind(22, a.new_best ? 1 : 0).bind(23, current_user());
  ins.run();
  const std::int64_t id = db_->last_insert_rowid();

  // Statistics and transition: read once, computed here, written with an upsert, and logged
  // from the values at hand instead of re-reading the rows.
  std::vector<std::string> archs{all_archs};
  if (!a.arch.empty() && a.arch != all_archs) archs.push_back(a.arch);
  for (const auto& arch : archs) {
    const auto old = read_stats(*db_, before_id, tid, arch);
    stats s = old.value_or(stats{});
    add_outcome(s, a.compile_ok, a.correct, a.measured_speedup, now);
    if (a.credits_step)
      add_step_credit(s.credit, a.correct ? a.measured_speedup : std::nullopt, a.new_best, a.parameters);
    upsert_stats(*db_, before_id, tid, arch, s);
    log.record(values_change("opt_stats", json::array({before_id, tid, arch}), stats_log_columns(),
                             old ? stats_log_values(*old) : json(nullptr), stats_log_values(s)));
  }

  if (after_id && a.correct) {
    auto& r = db_->cached(
        "SELECT count, mean_log_speedup FROM transitions WHERE from_state_id = ? AND technique_id = ? "
        "AND to_state_id = ?");
    json before = nullptr;
    std::int64_t n = 0;
    double mean = 0.0;
    {
      sql::statement_use use(r);
      r.bind(1, before_id).bind(2, tid).bind(3, after_id);
      if (r.step()) {
        n = r.get_int(0);
        mean = r.get_double(1);
        before = json::array({n, mean});
      }
    }
    const double x = std::log(*a.measured_speedup);
    const double next = mean + (x - mean) / static_cast<double>(n + 1);
    auto& t = db_->cached(
        "INSERT INTO transitions(from_state_id, technique_id, to_state_id, count, mean_log_speedup) "
        "VALUES(?, ?, ?, ?, ?) ON CONFLICT(from_state_id, technique_id, to_state_id) DO UPDATE SET count = excluded.count, "
        "mean_log_speedup = excluded.mean_log_speedup");
    t.bind(1, before_id).bind(2, tid).bind(3, after_id).bind(4, n + 1).bind(5, next).run();
    static const std::vector<std::string> columns{"count", "mean_log_speedup"};
    log.record(values_change("transitions", json::array({before_id, tid, after_id}), columns, before,
                             json::array({n + 1, next})));
  }

  log.commit(update_cause{"numeric", "attempt " + std::to_string(id), {id}});
  return id;
}

namespace {

constexpr const char* attempt_columns =
    "SELECT a.id, a.task, a.trajectory, a.iteration, a.step, sb.name, coalesce(sa.name, ''), t.name, "
    "a.predicted_speedup, a.measured_speedup, a.compile_ok, a.correct, a.elapsed_cycles, a.runtime_ms, "
    "a.tokens_by_role, a.gpu_name, a.arch, a.code_hash, a.started_at, a.finished_at, a.parameters, "
    "a.credits_step, a.new_best "
    "FROM attempts a JOIN states sb ON sb.id = a.state_before_id "
    "LEFT JOIN states sa ON sa.id = a.state_after_id JOIN techniques t ON t.id = a.technique_id ";

std::vector<attempt> read_attempts(sql::statement& s) {
  std::vector<attempt> out;
  while (s.step()) {
    attempt a;
    a.id = s.get_int(0);
    a.task = s.get_text(1);
    a.trajectory = s.get_text(2);
    a.iteration = static_cast<int>(s.get_int(3));
    a.step = static_cast<int>(s.get_int(4));
    a.state_before = s.get_text(5);
    a.state_after = s.get_text(6);
    a.technique = s.get_text(7);
    a.predicted_speedup = s.get_opt_double(8);
    a.measured_speedup = s.get_opt_double(9);
    a.compile_ok = s.get_int(10) != 0;
    a.correct = s.get_int(11) != 0;
    a.elapsed_cycles = s.get_opt_int(12);
    a.runtime_ms = s.get_opt_double(13);
    const auto tokens = json::parse(s.get_text(14), nullptr, false);
    if (tokens.is_object())
      for (const auto& [role, n] : tokens.items())
        if (n.is_number_integer()) a.tokens_by_role[role] = n.get<std::int64_t>();
    a.gpu_name = s.get_text(15);
    a.arch = s.get_text(16);
    a.code_hash = s.get_text(17);
    a.started_at = s.get_text(18);
    a.finished_at = s.get_text(19);
    if (auto p = json::parse(s.get_text(20), nullptr, false); p.is_object()) a.parameters = std::move(p);
    a.credits_step = s.get_int(21) != 0;
    a.new_best = s.get_int(22) != 0;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::vector<attempt> knowledge_base::attempts(std::size_t limit) {
  std::string q = std::string(attempt_columns) + "ORDER BY a.id DESC";
  if (limit) q += " LIMIT " + std::to_string(limit);
  auto s = db_->prepare(q);
  return read_attempts(s);
}

std::vector<std::string> knowledge_base::tasks_behind(const std::string& state, const std::string& technique,
                                                     const std::string& arch, std::size_t limit) {
  auto& s = db_->cached(
      "SELECT a.task, max(a.id) AS latest FROM attempts a JOIN states b ON b.id = a.state_before_id "
      "JOIN techniques t ON t.id = a.technique_id WHERE b.name = ?1 AND t.name = ?2 AND a.credits_step = 1 "
      "AND (?3 = '' OR ?3 = 'all' OR a.arch = ?3) GROUP BY a.task ORDER BY latest DESC LIMIT ?4");
  sql::statement_use use(s);
  s.bind(1, state).bind(2, technique).bind(3, arch).bind(4, static_cast<std::int64_t>(limit));
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.get_text(0));
  return out;
}

std::vector<attempt> knowledge_base::attempts_of(const std::string& task, const std::string& trajectory_prefix) {
  // The (task, trajectory, step) index serves the range [prefix, prefix + U+10FFFF...).
  auto s = db_->prepare(std::string(attempt_columns) +
                        "WHERE a.task = ? AND a.trajectory >= ? AND a.trajectory < ? ORDER BY a.id");
  s.bind(1, task);
  s.bind(2, trajectory_prefix);
  s.bind(3, trajectory_prefix + "\xF4\x8F\xBF\xBF");
  return read_attempts(s);
}

}  // namespace kblaster::kb
