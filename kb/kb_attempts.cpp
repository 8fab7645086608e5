// The replay buffer: storing an attempt applies its numeric update (statistics of the state and
// technique for its architecture and for all, and the observed transition) in the same
// transaction, logged as one update.
#include "kb/change_log.h"
#include "kb/knowledge_base.h"
#include "kb/stats_math.h"
#include "kb/stats_store.h"

#include <cmath>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

void validate(const attempt& a);

}  // namespace

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
  return s;
}

namespace {

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

void upsert_stats(sql::database& db, std::int64_t sid, std::int64_t tid, const std::string& arch, const stats& s) {
  auto& q = db.cached(
      "INSERT OR REPLACE INTO opt_stats(state_id, technique_id, arch, attempts, compile_failures, "
      "incorrect, successes, n_measured, mean_log_speedup, m2_log_speedup, last_used) "
      "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  q.bind(1, sid).bind(2, tid).bind(3, arch).bind(4, s.attempts).bind(5, s.compile_failures);
  q.bind(6, s.incorrect).bind(7, s.successes).bind(8, s.n_measured).bind(9, s.mean_log_speedup);
  q.bind(10, s.m2_log_speedup).bind(11, s.last_used);
  q.run();
}

std::int64_t knowledge_base::record_attempt(const attempt& a) {
  require_writable();
  validate(a);
  sql::transaction tx(*db_);
  const auto id = insert_attempt(a);
  tx.commit();
  return id;
}

std::vector<std::int64_t> knowledge_base::record_attempts(const std::vector<attempt>& batch) {
  require_writable();
  for (const auto& a : batch) validate(a);
  sql::transaction tx(*db_);
  std::vector<std::int64_t> ids;
  ids.reserve(batch.size());
  for (const auto& a : batch) ids.push_back(insert_attempt(a));
  tx.commit();
  return ids;
}

std::int64_t knowledge_base::insert_attempt(const attempt& a) {
  const std::string now = now_iso8601();
  change_log log(*db_);
  const auto before_id = ensure_state(a.state_before, log);
  // 0 when the state after is unknown (SQLite rowids start at 1).
  const std::int64_t after_id = a.state_after.empty() ? 0 : ensure_state(a.state_after, log);
  const auto tid = ensure_technique(a.technique, log);

  // A technique tried in a state becomes one of the state's known optimizations.
  {
    auto& q = db_->cached("SELECT 1 FROM optimizations WHERE state_id = ? AND technique_id = ?");
    sql::statement_use use(q);
    q.bind(1, before_id).bind(2, tid);
    if (!q.step()) {
      auto& ins = db_->cached("INSERT INTO optimizations(state_id, technique_id, prior_speedup) VALUES(?, ?, 1.0)");
      ins.bind(1, before_id).bind(2, tid).run();
      const json key{{"state_id", before_id}, {"technique_id", tid}};
      log.record("optimizations", key, nullptr, log.snapshot("optimizations", key));
    }
  }

  auto& ins = db_->cached(
      "INSERT INTO attempts(task, trajectory, iteration, step, state_before_id, state_after_id, "
      "technique_id, predicted_speedup, measured_speedup, compile_ok, correct, runtime_ms, gpu_name, "
      "arch, started_at, finished_at, elapsed_cycles, tokens_by_role, code_hash) "
      "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, a.task).bind(2, a.trajectory).bind(3, a.iteration).bind(4, a.step).bind(5, before_id);
  after_id ? ins.bind(6, after_id) : ins.bind_null(6);
  ins.bind(7, tid).bind(8, a.predicted_speedup).bind(9, a.measured_speedup);
  ins.bind(10, a.compile_ok ? 1 : 0).bind(11, a.correct ? 1 : 0).bind(12, a.runtime_ms);
  ins.bind(13, a.gpu_name).bind(14, a.arch).bind(15, a.started_at.empty() ? now : a.started_at);
  ins.bind(16, a.finished_at.empty() ? now : a.finished_at).bind(17, a.elapsed_cycles);
  ins.bind(18, json(a.tokens_by_role).dump()).bind(19, a.code_hash);
  ins.run();
  const std::int64_t id = db_->last_insert_rowid();

  std::vector<std::string> archs{all_archs};
  if (!a.arch.empty() && a.arch != all_archs) archs.push_back(a.arch);
  for (const auto& arch : archs) {
    const json key{{"state_id", before_id}, {"technique_id", tid}, {"arch", arch}};
    const json before = log.snapshot("opt_stats", key);
    stats s = stats_from_row(before);
    add_outcome(s, a.compile_ok, a.correct, a.measured_speedup, now);
    upsert_stats(*db_, before_id, tid, arch, s);
    log.record("opt_stats", key, before, log.snapshot("opt_stats", key));
  }

  if (after_id && a.correct) {
    const json key{{"from_state_id", before_id}, {"technique_id", tid}, {"to_state_id", after_id}};
    const json before = log.snapshot("transitions", key);
    const std::int64_t n = before.is_null() ? 0 : before.at("count").get<std::int64_t>();
    const double mean = before.is_null() ? 0.0 : before.at("mean_log_speedup").get<double>();
    const double x = std::log(*a.measured_speedup);
    auto& t = db_->cached(
        "INSERT OR REPLACE INTO transitions(from_state_id, technique_id, to_state_id, count, "
        "mean_log_speedup) VALUES(?, ?, ?, ?, ?)");
    t.bind(1, before_id).bind(2, tid).bind(3, after_id).bind(4, n + 1);
    t.bind(5, mean + (x - mean) / static_cast<double>(n + 1)).run();
    log.record("transitions", key, before, log.snapshot("transitions", key));
  }

  log.commit(update_cause{"numeric", "attempt " + std::to_string(id), {id}});
  return id;
}

std::vector<attempt> knowledge_base::attempts(std::size_t limit) {
  std::string q =
      "SELECT a.id, a.task, a.trajectory, a.iteration, a.step, sb.name, coalesce(sa.name, ''), t.name, "
      "a.predicted_speedup, a.measured_speedup, a.compile_ok, a.correct, a.elapsed_cycles, a.runtime_ms, "
      "a.tokens_by_role, a.gpu_name, a.arch, a.code_hash, a.started_at, a.finished_at "
      "FROM attempts a JOIN states sb ON sb.id = a.state_before_id "
      "LEFT JOIN states sa ON sa.id = a.state_after_id JOIN techniques t ON t.id = a.technique_id "
      "ORDER BY a.id DESC";
  if (limit) q += " LIMIT " + std::to_string(limit);
  auto s = db_->prepare(q);
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
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace kblaster::kb
