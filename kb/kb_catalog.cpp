// States, techniques, per-state optimizations, lessons and transitions: reads, and logged writes.
#include "kb/change_log.h"
#include "support/time.h"
#include "kb/knowledge_base.h"
#include "kb/note_needs.h"
#include "kb/stats_math.h"
#include "kb/stats_store.h"

#include <algorithm>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

constexpr const char* state_columns =
    "id, name, primary_bottleneck, secondary, criteria, scope, origin, description, notes";

state state_from(const sql::statement& s) {
  state st;
  st.id = s.get_int(0);
  st.name = s.get_text(1);
  st.primary_bottleneck = s.get_text(2);
  const auto sec = json::parse(s.get_text(3), nullptr, false);
  if (sec.is_array())
    for (const auto& v : sec)
      if (v.is_string()) st.secondary.push_back(v.get<std::string>());
  st.criteria = json::parse(s.get_text(4), nullptr, false);
  if (st.criteria.is_discarded()) st.criteria = json::array();
  st.scope = s.get_text(5);
  st.origin = s.get_text(6);
  st.description = s.get_text(7);
  st.notes = s.get_text(8);
  return st;
}

void validate_name(const std::string& what, const std::string& name) {
  if (name.empty()) throw kb_error(error_kind::invalid_argument, what + " name is empty");
  if (name.front() == '$')
    throw kb_error(error_kind::invalid_argument, what + " name '" + name + "' may not start with '$'");
}

}  // namespace

std::vector<state> knowledge_base::states() {
  std::vector<state> out;
  auto s = db_->prepare(std::string("SELECT ") + state_columns + " FROM states ORDER BY name");
  while (s.step()) out.push_back(state_from(s));
  return out;
}

std::optional<state> knowledge_base::find_state(const std::string& name) {
  auto& s = db_->cached(std::string("SELECT ") + state_columns + " FROM states WHERE name = ?");
  sql::statement_use use(s);
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return state_from(s);
}

std::vector<technique> knowledge_base::techniques() {
  std::vector<technique> out;
  auto s = db_->prepare("SELECT id, name, category, description FROM techniques ORDER BY name");
  while (s.step()) out.push_back({s.get_int(0), s.get_text(1), s.get_text(2), s.get_text(3)});
  return out;
}

std::optional<technique> knowledge_base::find_technique(const std::string& name) {
  auto& s = db_->cached("SELECT id, name, category, description FROM techniques WHERE name = ?");
  sql::statement_use use(s);
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return technique{s.get_int(0), s.get_text(1), s.get_text(2), s.get_text(3)};
}

std::int64_t knowledge_base::state_id(const std::string& name) {
  auto& s = db_->cached("SELECT id FROM states WHERE name = ?");
  sql::statement_use use(s);
  s.bind(1, name);
  if (!s.step()) throw kb_error(error_kind::not_found, "no state named '" + name + "' in the KB");
  return s.get_int(0);
}

std::int64_t knowledge_base::technique_id(const std::string& name) {
  auto& s = db_->cached("SELECT id FROM techniques WHERE name = ?");
  sql::statement_use use(s);
  s.bind(1, name);
  if (!s.step()) throw kb_error(error_kind::not_found, "no technique named '" + name + "' in the KB");
  return s.get_int(0);
}

std::int64_t knowledge_base::ensure_state(const std::string& name, change_log& log) {
  try {
    return state_id(name);
  } catch (const kb_error& e) {
    if (e.kind() != error_kind::not_found) throw;
  }
  validate_name("state", name);
  auto& s = db_->cached("INSERT INTO states(name, primary_bottleneck, origin) VALUES(?, 'balanced', 'discovered')");
  s.bind(1, name).run();
  const auto id = db_->last_insert_rowid();
  log.record("states", {{"id", id}}, nullptr, log.snapshot("states", {{"id", id}}));
  matcher_->invalidate();
  return id;
}

std::int64_t knowledge_base::ensure_technique(const std::string& name, change_log& log) {
  try {
    return technique_id(name);
  } catch (const kb_error& e) {
    if (e.kind() != error_kind::not_found) throw;
  }
  validate_name("technique", name);
  auto& s = db_->cached("INSERT INTO techniques(name, category) VALUES(?, 'discovered')");
  s.bind(1, name).run();
  const auto id = db_->last_insert_rowid();
  log.record("techniques", {{"id", id}}, nullptr, log.snapshot("techniques", {{"id", id}}));
  return id;
}

std::int64_t knowledge_base::put_state(const state& st, const update_cause& cause) {
  require_writable();
  validate_name("state", st.name);
  const std::int64_t id = sql::write_transaction(*db_, [&] {
    change_log log(*db_);
    const std::int64_t sid = ensure_state(st.name, log);
    log.track("states", {{"id", sid}}, [&] {
      auto& s = db_->cached(
          "UPDATE states SET primary_bottleneck = ?, secondary = ?, criteria = ?, scope = ?, "
          "origin = ?, description = ?, notes = ? WHERE id = ?");
      s.bind(1, st.primary_bottleneck).bind(2, json(st.secondary).dump()).bind(3, st.criteria.dump());
      s.bind(4, st.scope.empty() ? std::string(all_archs) : st.scope).bind(5, st.origin);
      s.bind(6, st.description).bind(7, st.notes).bind(8, sid).run();
    });
    log.commit(cause);
    return sid;
  });
  matcher_->invalidate();
  return id;
}

std::int64_t knowledge_base::put_technique(const technique& t, const update_cause& cause) {
  require_writable();
  validate_name("technique", t.name);
  return sql::write_transaction(*db_, [&] {
    change_log log(*db_);
    const std::int64_t id = ensure_technique(t.name, log);
    log.track("techniques", {{"id", id}}, [&] {
      auto& s = db_->cached("UPDATE techniques SET category = ?, description = ? WHERE id = ?");
      s.bind(1, t.category).bind(2, t.description).bind(3, id).run();
    });
    log.commit(cause);
    return id;
  });
}

void knowledge_base::put_optimization(const std::string& state_name, const std::string& technique_name,
                                      double prior_speedup, const std::string& note,
                                      const update_cause& cause, const std::vector<std::vector<std::string>>& note_needs) {
  require_writable();
  if (!(prior_speedup > 0))
    throw kb_error(error_kind::invalid_argument, "prior speedup must be positive");
  sql::write_transaction(*db_, [&] {
    change_log log(*db_);
    const auto sid = state_id(state_name);
    const auto tid = technique_id(technique_name);
    log.track("optimizations", {{"state_id", sid}, {"technique_id", tid}}, [&] {
      auto& s = db_->cached(
          "INSERT INTO optimizations(state_id, technique_id, prior_speedup, note, note_needs) VALUES(?, ?, ?, ?, ?) "
          "ON CONFLICT(state_id, technique_id) DO UPDATE SET prior_speedup = excluded.prior_speedup, "
          "note = excluded.note, note_needs = excluded.note_needs");
      s.bind(1, sid).bind(2, tid).bind(3, prior_speedup).bind(4, note).bind(5, nlohmann::json(note_needs).dump()).run();
    });
    log.commit(cause);
  });
}

std::vector<optimization> knowledge_base::optimizations(const std::string& state_name, const std::string& arch) {
  const auto sid = state_id(state_name);
  const std::string a = arch.empty() ? std::string(all_archs) : arch;
  // One row per technique: the architecture's statistics when it has attempts there, else
  // the all-architecture row (the fallback the selection policies rely on).
  // Columns 0-5 name the technique and the row used; the statistics follow (a NULL count reads
  // as 0), the needs last.
  static const std::string sql =
      "SELECT t.name, t.category, t.description, o.note, o.prior_speedup, coalesce(x.arch, g.arch, 'all'), " +
      stats_select_list("coalesce(x.{}, g.{})") + ", o.note_needs "
      "FROM optimizations o JOIN techniques t ON t.id = o.technique_id "
      "LEFT JOIN opt_stats g ON g.state_id = o.state_id AND g.technique_id = o.technique_id AND g.arch = 'all' "
      "LEFT JOIN opt_stats x ON x.state_id = o.state_id AND x.technique_id = o.technique_id "
      "  AND x.arch = ?2 AND ?2 <> 'all' AND x.attempts > 0 "
      "WHERE o.state_id = ?1";
  auto& s = db_->cached(sql);
  sql::statement_use use(s);
  s.bind(1, sid).bind(2, a);
  std::vector<optimization> out;
  while (s.step()) {
    optimization o;
    o.technique = s.get_text(0);
    o.category = s.get_text(1);
    o.description = s.get_text(2);
    o.note = s.get_text(3);
    o.prior_speedup = s.get_double(4);
    o.arch = s.get_text(5);
    o.statistics = stats_from(s, 6);
    const int needs_column = 6 + static_cast<int>(stats_column_names().size());
    o.note_needs = clauses_from_json(nlohmann::json::parse(s.get_text(needs_column), nullptr, false));
    o.predicted_speedup = predicted_speedup(o.statistics, o.prior_speedup);
    o.confidence = confidence(o.statistics);
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const optimization& x, const optimization& y) {
    return x.predicted_speedup != y.predicted_speedup ? x.predicted_speedup > y.predicted_speedup
                                                      : x.technique < y.technique;
  });
  return out;
}

std::int64_t knowledge_base::add_lesson(const lesson& l, const update_cause& cause) {
  require_writable();
  if (l.text.empty()) throw kb_error(error_kind::invalid_argument, "a lesson needs text");
  return sql::write_transaction(*db_, [&] {
    change_log log(*db_);
    const auto sid = state_id(l.state);
    if (!l.technique.empty()) technique_id(l.technique);  // must exist
    auto& s = db_->cached(
        "INSERT INTO lessons(state_id, technique, arch, text, provenance, created_at) VALUES(?, ?, ?, ?, ?, ?)");
    s.bind(1, sid).bind(2, l.technique).bind(3, l.arch.empty() ? std::string(all_archs) : l.arch);
    s.bind(4, l.text).bind(5, l.provenance).bind(6, l.created_at.empty() ? support::utc_now(support::timestamp_precision::milliseconds) : l.created_at).run();
    const auto id = db_->last_insert_rowid();
    log.record("lessons", {{"id", id}}, nullptr, log.snapshot("lessons", {{"id", id}}));
    log.commit(cause);
    return id;
  });
}

std::vector<lesson> knowledge_base::lessons(const std::string& state_name) {
  const auto sid = state_id(state_name);
  auto s = db_->prepare(
      "SELECT id, technique, arch, text, provenance, created_at FROM lessons WHERE state_id = ? ORDER BY id");
  s.bind(1, sid);
  std::vector<lesson> out;
  while (s.step())
    out.push_back({s.get_int(0), state_name, s.get_text(1), s.get_text(2), s.get_text(3), s.get_text(4),
                   s.get_text(5)});
  return out;
}

std::vector<transition> knowledge_base::transitions_from(const std::string& state_name) {
  const auto sid = state_id(state_name);
  auto s = db_->prepare(
      "SELECT t.name, b.name, x.count, x.mean_log_speedup FROM transitions x "
      "JOIN techniques t ON t.id = x.technique_id JOIN states b ON b.id = x.to_state_id "
      "WHERE x.from_state_id = ? ORDER BY x.count DESC, t.name, b.name");
  s.bind(1, sid);
  std::vector<transition> out;
  while (s.step()) out.push_back({state_name, s.get_text(0), s.get_text(1), s.get_int(2), s.get_double(3)});
  return out;
}

}  // namespace kblaster::kb
