// Checking and applying KB edit operations. Writes go through the KB's change_log inside one
// sql::transaction, so the whole batch is one revertible entry of the update log
// (`kblaster kb history --revert ID` undoes it).
#include "engine/agents/kb_edit.h"
#include "support/text.h"
#include "support/time.h"

#include "engine/agents/json_schema.h"
#include "engine/agents/prompt_library.h"
#include "kb/change_log.h"
#include "kb/state_match.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

std::int64_t id_of(kb::sql::database& db, const char* table, const std::string& name) {
  auto& s = db.cached(std::string("SELECT id FROM ") + table + " WHERE name = ?");
  kb::sql::statement_use use(s);
  s.bind(1, name);
  return s.step() ? s.get_int(0) : 0;
}

bool linked(kb::sql::database& db, std::int64_t sid, std::int64_t tid) {
  auto& s = db.cached("SELECT 1 FROM optimizations WHERE state_id = ? AND technique_id = ?");
  kb::sql::statement_use use(s);
  s.bind(1, sid).bind(2, tid);
  return s.step();
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

const json& kb_edit_schema() {
  static const json schema = json::parse(embedded_prompt_files().at("kb_edit.schema.json"));
  return schema;
}

std::vector<std::string> check_kb_edits(const json& edits, kb::knowledge_base& kb) {
  auto problems = validate_json(edits, kb_edit_schema());
  if (!problems.empty()) return problems;
  auto& db = kb.db();
  std::set<std::string> new_states, new_techniques;
  std::set<std::pair<std::string, std::string>> new_links, dropped_links;
  auto state_known = [&](const std::string& s) { return new_states.count(s) || id_of(db, "states", s) != 0; };
  auto tech_known = [&](const std::string& t) { return new_techniques.count(t) || id_of(db, "techniques", t) != 0; };
  auto is_linked = [&](const std::string& s, const std::string& t) {
    if (dropped_links.count({s, t})) return false;
    if (new_links.count({s, t})) return true;
    const auto sid = id_of(db, "states", s), tid = id_of(db, "techniques", t);
    return sid && tid && linked(db, sid, tid);
  };
  const auto& ops = edits["operations"];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    const std::string where = "operations[" + std::to_string(i) + "] (" + op["op"].get<std::string>() + "): ";
    const std::string kind = op["op"];
    const std::string st = op["state"];
    if (kind == "add_discovered_state") {
      if (state_known(st)) problems.push_back(where + "state '" + st + "' already exists; refine it with other operations");
      if (!contains(kb::primary_bottlenecks(), op["primary_bottleneck"]))
        problems.push_back(where + "primary_bottleneck '" + op["primary_bottleneck"].get<std::string>() +
                           "' is not one of the classifier's names");
      for (const auto& s : op["secondary"])
        if (!s.is_string() || !contains(kb::secondary_characteristics(), s.get<std::string>()))
          problems.push_back(where + "secondary characteristic " + s.dump() + " is not one of the classifier's names");
      new_states.insert(st);
      continue;
    }
    if (!state_known(st)) {
      problems.push_back(where + "no state named '" + st + "' in the KB");
      continue;
    }
    if (kind == "add_lesson") {
      const std::string t = op.value("technique", "");
      if (!t.empty() && !tech_known(t)) problems.push_back(where + "no technique named '" + t + "' in the KB");
      continue;
    }
    const std::string t = op["technique"];
    if (kind == "add_technique") {
      if (is_linked(st, t)) problems.push_back(where + "'" + t + "' is already listed for '" + st + "'; use adjust_prediction");
      new_techniques.insert(t);
      new_links.insert({st, t});
    } else if (!is_linked(st, t)) {
      problems.push_back(where + "technique '" + t + "' is not listed for state '" + st + "'");
    } else if (kind == "deprecate_technique") {
      dropped_links.insert({st, t});
    }
  }
  return problems;
}

kb_edit_result apply_kb_edits(const json& edits, kb::knowledge_base& kb, const kb::update_cause& cause) {
  if (kb.read_only()) throw kb::kb_error(kb::error_kind::read_only, "the KB is open read-only; edits not applied");
  const auto problems = check_kb_edits(edits, kb);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    throw kb::kb_error(kb::error_kind::invalid_argument, "KB edits rejected, nothing applied:" + all);
  }
  auto& db = kb.db();
  kb::sql::transaction tx(db);
  kb::change_log log(db);
  const std::string now = support::utc_now(support::timestamp_precision::milliseconds);
  for (const auto& op : edits["operations"]) {
    const std::string kind = op["op"];
    const std::string st = op["state"];
    if (kind == "add_discovered_state") {
      auto& s = db.cached(
          "INSERT INTO states(name, primary_bottleneck, secondary, criteria, origin, description) "
          "VALUES(?, ?, ?, ?, 'discovered', ?)");
      s.bind(1, st).bind(2, op["primary_bottleneck"].get<std::string>()).bind(3, op["secondary"].dump());
      s.bind(4, op.value("criteria", json::array()).dump()).bind(5, op["description"].get<std::string>()).run();
      const auto id = db.last_insert_rowid();
      log.record("states", {{"id", id}}, nullptr, log.snapshot("states", {{"id", id}}));
      continue;
    }
    const auto sid = id_of(db, "states", st);
    if (kind == "add_lesson") {
      auto& s = db.cached(
          "INSERT INTO lessons(state_id, technique, arch, text, provenance, created_at) VALUES(?, ?, ?, ?, ?, ?)");
      s.bind(1, sid).bind(2, op.value("technique", "")).bind(3, op.value("arch", "all"));
      s.bind(4, op["text"].get<std::string>()).bind(5, "parameter_update agent; " + cause.detail.substr(0, 200)).bind(6, now).run();
      const auto id = db.last_insert_rowid();
      log.record("lessons", {{"id", id}}, nullptr, log.snapshot("lessons", {{"id", id}}));
      continue;
    }
    const std::string t = op["technique"];
    if (kind == "add_technique") {
      std::int64_t tid = id_of(db, "techniques", t);
      if (tid == 0) {
        auto& s = db.cached("INSERT INTO techniques(name, category, description) VALUES(?, ?, ?)");
        s.bind(1, t).bind(2, op["category"].get<std::string>()).bind(3, op["description"].get<std::string>()).run();
        tid = db.last_insert_rowid();
        log.record("techniques", {{"id", tid}}, nullptr, log.snapshot("techniques", {{"id", tid}}));
      }
      const json key{{"state_id", sid}, {"technique_id", tid}};
      log.track("optimizations", key, [&] {
        auto& s = db.cached("INSERT INTO optimizations(state_id, technique_id, prior_speedup, note) VALUES(?, ?, ?, ?)");
        s.bind(1, sid).bind(2, tid).bind(3, op["predicted_speedup"].get<double>()).bind(4, op.value("note", "")).run();
      });
      continue;
    }
    const auto tid = id_of(db, "techniques", t);
    const json key{{"state_id", sid}, {"technique_id", tid}};
    if (kind == "adjust_prediction") {
      log.track("optimizations", key, [&] {
        auto& s = db.cached("UPDATE optimizations SET prior_speedup = ? WHERE state_id = ? AND technique_id = ?");
        s.bind(1, op["predicted_speedup"].get<double>()).bind(2, sid).bind(3, tid).run();
      });
    } else if (kind == "adjust_confidence") {
      // The KB's confidence is derived from attempt counts, which an agent must not forge; what
      // it may change is how strongly the prior claims a gain: the prior's log-speedup is scaled
      // by `factor` (below 1 pulls the belief toward "no change"), and the reason kept in the note.
      double prior = 1.1;
      {
        auto& q = db.cached("SELECT prior_speedup FROM optimizations WHERE state_id = ? AND technique_id = ?");
        kb::sql::statement_use use(q);
        q.bind(1, sid).bind(2, tid);
        if (q.step()) prior = q.get_double(0);
      }
      const double f = op["factor"].get<double>();
      const double scaled = std::exp(std::log(std::max(prior, 1e-6)) * f);
      const std::string tag = " [confidence x" + support::fixed_text(f, 2) + ": ";
      log.track("optimizations", key, [&] {
        auto& s = db.cached(
            "UPDATE optimizations SET prior_speedup = ?, note = trim(note || ? || ? || ']') "
            "WHERE state_id = ? AND technique_id = ?");
        s.bind(1, scaled).bind(2, tag).bind(3, op["reason"].get<std::string>());
        s.bind(4, sid).bind(5, tid).run();
      });
    } else if (kind == "deprecate_technique") {
      log.track("optimizations", key, [&] {
        auto& s = db.cached("DELETE FROM optimizations WHERE state_id = ? AND technique_id = ?");
        s.bind(1, sid).bind(2, tid).run();
      });
    }
  }
  kb_edit_result r;
  r.operations = edits["operations"].size();
  r.update_id = log.commit(cause);
  tx.commit();
  return r;
}

}  // namespace kblaster::engine::agents
