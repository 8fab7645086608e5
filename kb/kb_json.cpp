// JSON export and import, keyed by state in the paper's shape:
//   {"$format": ..., "$techniques": {...},
//    "<state>": {"primary_bottleneck", "secondary_characteristics", ..., "optimizations": [
//        {"technique", "description", ...statistics, "by_arch": {"sm_80": {...}}}]}}
// Importing merges: texts are replaced, statistics are pooled, lessons and transitions added.
#include "kb/change_log.h"
#include "support/time.h"
#include "kb/knowledge_base.h"
#include "kb/note_needs.h"
#include "kb/stats_math.h"
#include "kb/stats_store.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace kblaster::kb {
namespace {

using json = nlohmann::json;
constexpr const char* format_tag = "kblaster-kb/1";

json stats_json(const stats& s, double prior) {
  return {{"attempts", s.attempts},
          {"compile_failures", s.compile_failures},
          {"incorrect_results", s.incorrect},
          {"successes", s.successes},
          {"n_measured", s.n_measured},
          {"mean_log_speedup", s.mean_log_speedup},
          {"m2_log_speedup", s.m2_log_speedup},
          {"variance_log_speedup", s.variance_log_speedup()},
          {"predicted_speedup", predicted_speedup(s, prior)},
          {"confidence", confidence(s)},
          {"last_used", s.last_used ? json(*s.last_used) : json(nullptr)},
          {"search_credit", {{"steps", s.credit.steps},
                             {"gains", s.credit.gains},
                             {"new_bests", s.credit.new_bests},
                             {"weight", s.credit.weight},
                             {"log_gain", s.credit.log_gain},
                             {"best_log_gain", s.credit.best_log_gain},
                             {"best_parameters", s.credit.best_parameters}}}};
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw kb_error(error_kind::invalid_argument, "import: " + where + ": " + what);
}

std::string str(const json& o, const char* key, const std::string& where, const std::string& def = "") {
  if (!o.contains(key) || o[key].is_null()) return def;
  if (!o[key].is_string()) bad(where, std::string("'") + key + "' must be a string");
  return o[key].get<std::string>();
}

double num(const json& o, const char* key, const std::string& where, double def) {
  if (!o.contains(key) || o[key].is_null()) return def;
  if (!o[key].is_number() || !std::isfinite(o[key].get<double>()))
    bad(where, std::string("'") + key + "' must be a finite number");
  return o[key].get<double>();
}

std::int64_t count(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o[key].is_null()) return 0;
  if (!o[key].is_number_integer() || o[key].get<std::int64_t>() < 0)
    bad(where, std::string("'") + key + "' must be a non-negative integer");
  return o[key].get<std::int64_t>();
}

// An export's search credit (absent in exports made before schema 6: no credit).
search_credit credit_from_json(const json& o, const std::string& where) {
  if (!o.is_object()) bad(where, "'search_credit' must be an object");
  search_credit c;
  c.steps = count(o, "steps", where);
  c.gains = count(o, "gains", where);
  c.new_bests = count(o, "new_bests", where);
  c.weight = num(o, "weight", where, 0.0);
  c.log_gain = num(o, "log_gain", where, 0.0);
  c.best_log_gain = num(o, "best_log_gain", where, 0.0);
  if (c.gains > c.steps || c.new_bests > c.steps || c.weight < 0 || c.log_gain < 0 || c.best_log_gain < 0)
    bad(where, "inconsistent search credit (gains or new bests exceed steps, or a negative sum)");
  if (o.contains("best_parameters") && !o["best_parameters"].is_null()) {
    if (!o["best_parameters"].is_object()) bad(where, "'search_credit.best_parameters' must be an object or null");
    c.best_parameters = o["best_parameters"];
  }
  return c;
}

stats stats_from_json(const json& o, const std::string& where) {
  stats s;
  s.attempts = count(o, "attempts", where);
  s.compile_failures = count(o, "compile_failures", where);
  s.incorrect = count(o, "incorrect_results", where);
  s.successes = count(o, "successes", where);
  s.n_measured = count(o, "n_measured", where);
  s.mean_log_speedup = num(o, "mean_log_speedup", where, 0.0);
  s.m2_log_speedup = num(o, "m2_log_speedup", where, 0.0);
  if (s.compile_failures + s.incorrect + s.n_measured > s.attempts || s.successes > s.n_measured)
    bad(where, "inconsistent counts (failures + measured exceed attempts, or successes exceed measured)");
  if (o.contains("last_used") && o["last_used"].is_string()) s.last_used = o["last_used"].get<std::string>();
  if (o.contains("search_credit")) s.credit = credit_from_json(o["search_credit"], where);
  return s;
}

// --- import_json's steps ---

// What the import's steps share: the connection, the transaction's change log, the running
// counts, and the KB's private lookups (passed in as functions: these helpers are not members).
struct import_context {
  sql::database& db;
  change_log& log;
  import_summary& sum;
  bool seeding;
  std::function<std::int64_t(const std::string&)> ensure_state, ensure_technique, state_id;
  std::function<std::optional<technique>(const std::string&)> find_technique;
};

// Rejects, before any transaction, a document that is not an object or carries another format's tag.
void check_document(const json& doc) {
  if (!doc.is_object()) bad("document", "must be a JSON object keyed by state name");
  if (doc.contains("$format") && doc["$format"] != format_tag)
    bad("$format", "unsupported format " + doc["$format"].dump() + " (expected \"" + format_tag + "\")");
}

// True when the KB was seeded (or holds states) already. Checked again under the transaction's
// lock: another process may have seeded it since seed_if_empty looked, and the seed loads once.
bool already_seeded(sql::database& db) {
  return db.query_int("SELECT count(*) FROM meta WHERE key = 'seeded_at'") > 0 ||
         db.query_int("SELECT count(*) FROM states") > 0;
}

// Keys starting with '$' ($format, $techniques) describe the document; every other key names a state.
bool is_state_key(const std::string& name) { return !name.empty() && name.front() != '$'; }

// Creates (or finds) a technique and replaces its category and description, logged; returns its id.
std::int64_t put_technique_row(import_context& cx, const std::string& name, const std::string& category,
                               const std::string& description) {
  const auto id = cx.ensure_technique(name);
  cx.log.track("techniques", {{"id", id}}, [&] {
    auto& s = cx.db.cached("UPDATE techniques SET category = ?, description = ? WHERE id = ?");
    s.bind(1, category).bind(2, description).bind(3, id).run();
  });
  ++cx.sum.techniques;
  return id;
}

// The "$techniques" section: each technique's category and description.
void import_techniques(import_context& cx, const json& doc) {
  if (!doc.contains("$techniques")) return;
  if (!doc["$techniques"].is_object()) bad("$techniques", "must be an object keyed by technique name");
  for (const auto& [name, t] : doc["$techniques"].items()) {
    const std::string where = "technique '" + name + "'";
    if (!t.is_object()) bad(where, "must be an object");
    put_technique_row(cx, name, str(t, "category", where), str(t, "description", where));
  }
}

// A state's 'secondary_characteristics', checked to be an array of strings (none when absent).
std::vector<std::string> secondary_of(const json& s, const std::string& where) {
  std::vector<std::string> secondary;
  if (!s.contains("secondary_characteristics")) return secondary;
  if (!s["secondary_characteristics"].is_array()) bad(where, "'secondary_characteristics' must be an array");
  for (const auto& v : s["secondary_characteristics"]) {
    if (!v.is_string()) bad(where, "'secondary_characteristics' must hold strings");
    secondary.push_back(v.get<std::string>());
  }
  return secondary;
}

// Creates (or finds) a state and replaces its texts, logged; returns its id.
std::int64_t put_state_row(import_context& cx, const std::string& name, const json& s, const std::string& where) {
  const std::vector<std::string> secondary = secondary_of(s, where);
  const std::string primary = str(s, "primary_bottleneck", where);
  if (primary.empty()) bad(where, "'primary_bottleneck' is required");
  const json criteria = s.value("criteria", json::array());
  const auto sid = cx.ensure_state(name);
  cx.log.track("states", {{"id", sid}}, [&] {
    auto& q = cx.db.cached(
        "UPDATE states SET primary_bottleneck = ?, secondary = ?, criteria = ?, scope = ?, origin = ?, "
        "description = ?, notes = ? WHERE id = ?");
    q.bind(1, primary).bind(2, json(secondary).dump()).bind(3, criteria.dump());
    q.bind(4, str(s, "scope", where, all_archs)).bind(5, str(s, "origin", where, cx.seeding ? "seed" : "imported"));
    q.bind(6, str(s, "description", where)).bind(7, str(s, "notes", where)).bind(8, sid).run();
  });
  ++cx.sum.states;
  return sid;
}

// The id of the technique an optimization names: an existing, described technique is kept as
// it is; otherwise the optimization's own category and description fill it in.
std::int64_t optimization_technique(import_context& cx, const json& o, const std::string& tname,
                                    const std::string& owhere) {
  if (auto t = cx.find_technique(tname); t && !t->description.empty()) return t->id;
  return put_technique_row(cx, tname, str(o, "category", owhere), str(o, "description", owhere));
}

// An optimization's statistics, all checked before any is merged: the all-architectures row
// (its top-level fields, when it has 'attempts') and one row per 'by_arch' entry.
std::vector<std::pair<std::string, stats>> stats_rows(const json& o, const std::string& owhere) {
  std::vector<std::pair<std::string, stats>> rows;
  if (o.contains("attempts")) rows.emplace_back(all_archs, stats_from_json(o, owhere));
  if (o.contains("by_arch")) {
    if (!o["by_arch"].is_object()) bad(owhere, "'by_arch' must be an object keyed by architecture");
    for (const auto& [arch, x] : o["by_arch"].items()) {
      if (!x.is_object()) bad(owhere, "'by_arch." + arch + "' must be an object");
      rows.emplace_back(arch, stats_from_json(x, owhere + " arch " + arch));
    }
  }
  return rows;
}

// Pools each row into the KB's statistics for its architecture, logged; empty rows change nothing.
void merge_stats_rows(import_context& cx, std::int64_t sid, std::int64_t tid,
                      const std::vector<std::pair<std::string, stats>>& rows) {
  for (const auto& [arch, incoming] : rows) {
    if (incoming.attempts == 0 && !incoming.last_used) continue;
    const json key{{"state_id", sid}, {"technique_id", tid}, {"arch", arch}};
    const json before = cx.log.snapshot("opt_stats", key);
    upsert_stats(cx.db, sid, tid, arch, merge(stats_from_row(before), incoming));
    cx.log.record("opt_stats", key, before, cx.log.snapshot("opt_stats", key));
  }
}

// An optimization's 'note_needs' (kb/note_needs.h) as stored: clauses of operation names, each
// one the engine can see in a kernel's source. Absent: the note fits every kernel.
std::string note_needs_of(const json& o, const std::string& where) {
  if (!o.contains("note_needs")) return "[]";
  const json& n = o["note_needs"];
  if (!n.is_array()) bad(where, "'note_needs' must be an array of clauses (arrays of operation names)");
  for (const auto& clause : n) {
    const json names = clause.is_string() ? json::array({clause}) : clause;
    if (!names.is_array() || names.empty()) bad(where, "each clause of 'note_needs' must be a name or a non-empty array of names");
    for (const auto& name : names) {
      const auto& known = note_operations();
      if (!name.is_string() || std::find(known.begin(), known.end(), name.get<std::string>()) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        bad(where, "'note_needs' names " + name.dump() + ", which is not an operation (known: " + list + ")");
      }
    }
  }
  return json(clauses_from_json(n)).dump();
}

// One optimization of a state: its technique, its prior and note (replaced), its statistics (pooled).
void import_optimization(import_context& cx, std::int64_t sid, const json& o, const std::string& where) {
  const std::string tname = o.is_object() ? str(o, "technique", where) : "";
  if (tname.empty()) bad(where, "each optimization needs a 'technique' name");
  const std::string owhere = where + " technique '" + tname + "'";
  const std::int64_t tid = optimization_technique(cx, o, tname, owhere);
  const double prior = num(o, "prior_speedup", owhere, 1.1);
  if (prior <= 0) bad(owhere, "'prior_speedup' must be positive");
  const json okey{{"state_id", sid}, {"technique_id", tid}};
  cx.log.track("optimizations", okey, [&] {
    auto& q = cx.db.cached(
        "INSERT INTO optimizations(state_id, technique_id, prior_speedup, note, note_needs) VALUES(?, ?, ?, ?, ?) "
        "ON CONFLICT(state_id, technique_id) DO UPDATE SET prior_speedup = excluded.prior_speedup, note = excluded.note, "
        "note_needs = excluded.note_needs");
    q.bind(1, sid).bind(2, tid).bind(3, prior).bind(4, str(o, "note", owhere)).bind(5, note_needs_of(o, owhere)).run();
  });
  ++cx.sum.optimizations;
  merge_stats_rows(cx, sid, tid, stats_rows(o, owhere));
}

// True when the state already holds this exact lesson, so that importing a file twice adds it once.
bool lesson_exists(sql::database& db, std::int64_t sid, const std::string& tech, const std::string& arch,
                   const std::string& text) {
  auto& dup = db.cached("SELECT 1 FROM lessons WHERE state_id = ? AND technique = ? AND arch = ? AND text = ?");
  sql::statement_use use(dup);
  dup.bind(1, sid).bind(2, tech).bind(3, arch).bind(4, text);
  return dup.step();
}

// One lesson of a state, added and logged unless the same lesson is there already.
void import_lesson(import_context& cx, std::int64_t sid, const json& l, const std::string& where) {
  if (!l.is_object()) bad(where, "each lesson must be an object");
  const std::string text = str(l, "text", where);
  if (text.empty()) bad(where, "a lesson needs 'text'");
  const std::string tech = str(l, "technique", where), arch = str(l, "arch", where, all_archs);
  if (lesson_exists(cx.db, sid, tech, arch, text)) return;
  auto& q = cx.db.cached(
      "INSERT INTO lessons(state_id, technique, arch, text, provenance, created_at) VALUES(?, ?, ?, ?, ?, ?)");
  q.bind(1, sid).bind(2, tech).bind(3, arch).bind(4, text).bind(5, str(l, "provenance", where));
  q.bind(6, str(l, "created_at", where, support::utc_now(support::timestamp_precision::milliseconds))).run();
  const auto id = cx.db.last_insert_rowid();
  cx.log.record("lessons", {{"id", id}}, nullptr, cx.log.snapshot("lessons", {{"id", id}}));
  ++cx.sum.lessons;
}

// One state (not its transitions): its row, then its optimizations and its lessons.
void import_state(import_context& cx, const std::string& name, const json& s) {
  const std::string where = "state '" + name + "'";
  if (!s.is_object()) bad(where, "must be an object");
  const auto sid = put_state_row(cx, name, s, where);
  if (s.contains("optimizations") && !s["optimizations"].is_array()) bad(where, "'optimizations' must be an array");
  for (const auto& o : s.value("optimizations", json::array())) import_optimization(cx, sid, o, where);
  if (s.contains("lessons") && !s["lessons"].is_array()) bad(where, "'lessons' must be an array");
  for (const auto& l : s.value("lessons", json::array())) import_lesson(cx, sid, l, where);
}

// One transition out of state `from`, pooled into the KB's row (count-weighted mean), logged;
// unknown techniques and target states are added as discovered; a zero count changes nothing.
void import_transition(import_context& cx, std::int64_t from, const json& t, const std::string& where) {
  if (!t.is_object()) bad(where, "each transition must be an object");
  const std::string tech = str(t, "technique", where), to = str(t, "to", where);
  if (tech.empty() || to.empty()) bad(where, "each transition needs 'technique' and 'to'");
  const std::int64_t n = count(t, "count", where);
  const double mean = num(t, "mean_log_speedup", where, 0.0);
  if (n == 0) return;
  const json key{{"from_state_id", from}, {"technique_id", cx.ensure_technique(tech)},
                 {"to_state_id", cx.ensure_state(to)}};
  const json before = cx.log.snapshot("transitions", key);
  const std::int64_t m = before.is_null() ? 0 : before["count"].get<std::int64_t>();
  const double old = before.is_null() ? 0.0 : before["mean_log_speedup"].get<double>();
  const double pooled = m == 0 ? mean : (old * static_cast<double>(m) + mean * static_cast<double>(n)) /
                                            static_cast<double>(m + n);
  auto& q = cx.db.cached(
      "INSERT INTO transitions(from_state_id, technique_id, to_state_id, count, mean_log_speedup) "
      "VALUES(?, ?, ?, ?, ?) ON CONFLICT(from_state_id, technique_id, to_state_id) DO UPDATE SET "
      "count = excluded.count, mean_log_speedup = excluded.mean_log_speedup");
  q.bind(1, from).bind(2, key["technique_id"].get<std::int64_t>()).bind(3, key["to_state_id"].get<std::int64_t>());
  q.bind(4, m + n).bind(5, pooled).run();
  cx.log.record("transitions", key, before, cx.log.snapshot("transitions", key));
  ++cx.sum.transitions;
}

// A state's 'transitions' (the state itself exists by now: every state was imported first).
void import_transitions(import_context& cx, const std::string& name, const json& s) {
  const std::string where = "state '" + name + "' transitions";
  if (!s["transitions"].is_array()) bad(where, "must be an array");
  const auto from = cx.state_id(name);
  for (const auto& t : s["transitions"]) import_transition(cx, from, t, where);
}

// Records when the seed was loaded, so that the KB is never seeded again.
void mark_seeded(sql::database& db) {
  auto& q = db.cached("INSERT INTO meta(key, value) VALUES('seeded_at', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  q.bind(1, support::utc_now(support::timestamp_precision::milliseconds)).run();
}

}  // namespace

json knowledge_base::export_json() {
  json doc = json::object();
  doc["$format"] = format_tag;
  json techs = json::object();
  for (const auto& t : techniques()) techs[t.name] = {{"category", t.category}, {"description", t.description}};
  doc["$techniques"] = techs;

  auto opt_q = db_->prepare(
      "SELECT t.id, t.name, t.category, t.description, o.prior_speedup, o.note, o.note_needs FROM optimizations o "
      "JOIN techniques t ON t.id = o.technique_id WHERE o.state_id = ? ORDER BY t.name");
  auto stats_q = db_->prepare("SELECT arch, " + stats_select_list() +
                              " FROM opt_stats WHERE state_id = ? AND technique_id = ? ORDER BY arch");
  for (const auto& st : states()) {
    json s = {{"primary_bottleneck", st.primary_bottleneck},
              {"secondary_characteristics", st.secondary},
              {"description", st.description},
              {"criteria", st.criteria},
              {"scope", st.scope},
              {"origin", st.origin},
              {"notes", st.notes}};
    json opts = json::array();
    opt_q.bind(1, st.id);
    while (opt_q.step()) {
      const double prior = opt_q.get_double(4);
      json o = {{"technique", opt_q.get_text(1)}, {"category", opt_q.get_text(2)},
                {"description", opt_q.get_text(3)}, {"prior_speedup", prior}, {"note", opt_q.get_text(5)}};
      if (const auto needs = clauses_from_json(json::parse(opt_q.get_text(6), nullptr, false)); !needs.empty())
        o["note_needs"] = needs;
      o.update(stats_json(stats{}, prior));
      json by_arch = json::object();
      stats_q.bind(1, st.id).bind(2, opt_q.get_int(0));
      while (stats_q.step()) {
        const stats x = stats_from(stats_q, 1);
        if (stats_q.get_text(0) == all_archs) o.update(stats_json(x, prior));
        else by_arch[stats_q.get_text(0)] = stats_json(x, prior);
      }
      stats_q.reset();
      o["by_arch"] = by_arch;
      opts.push_back(o);
    }
    opt_q.reset();
    s["optimizations"] = opts;
    json ls = json::array();
    for (const auto& l : lessons(st.name))
      ls.push_back({{"technique", l.technique}, {"arch", l.arch}, {"text", l.text},
                    {"provenance", l.provenance}, {"created_at", l.created_at}});
    s["lessons"] = ls;
    json tr = json::array();
    for (const auto& t : transitions_from(st.name))
      tr.push_back({{"technique", t.technique}, {"to", t.to_state}, {"count", t.count},
                    {"mean_log_speedup", t.mean_log_speedup}});
    s["transitions"] = tr;
    doc[st.name] = s;
  }
  return doc;
}

import_summary knowledge_base::import_json(const json& doc, const update_cause& cause) {
  require_writable();
  check_document(doc);
  const bool seeding = cause.kind == "seed";
  // The whole document or nothing; run again from scratch if a server connection drops.
  import_summary done = sql::write_transaction(*db_, [&] {
    import_summary sum;
    if (seeding && already_seeded(*db_)) return sum;  // another process seeded it first
    change_log log(*db_);
    import_context cx{*db_,
                      log,
                      sum,
                      seeding,
                      [&](const std::string& n) { return ensure_state(n, log); },
                      [&](const std::string& n) { return ensure_technique(n, log); },
                      [&](const std::string& n) { return state_id(n); },
                      [&](const std::string& n) { return find_technique(n); }};

    import_techniques(cx, doc);
    for (const auto& [name, s] : doc.items())
      if (is_state_key(name)) import_state(cx, name, s);
    // Transitions last: they may name states that appear later in the document.
    for (const auto& [name, s] : doc.items())
      if (is_state_key(name) && s.contains("transitions")) import_transitions(cx, name, s);

    if (seeding) mark_seeded(*db_);
    sum.update_id = log.commit(cause);
    return sum;
  });
  matcher_->invalidate();
  return done;
}

}  // namespace kblaster::kb
