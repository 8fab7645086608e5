// What the KB offers a kernel, read from the stored statistics: the state its evidence matches
// (a discovered one adopted), that state's techniques as candidates with their records and
// follow-on, the selection over them (the policy itself is kb/selection_policy), and the static
// strategies for a kernel without a profile.
#include "kb/knowledge_base.h"

#include "kb/change_log.h"
#include "kb/stats_math.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kblaster::kb {

std::vector<choice> knowledge_base::select(const selection_request& request) {
  if (request.k == 0) return {};
  return choose(candidates(request.state, request.arch), request);
}

std::vector<candidate> knowledge_base::candidates(const std::string& state, const std::string& arch) {
  const auto sid = state_id(state);
  std::vector<candidate> cands;
  const auto follow = follow_on(state, arch);
  for (auto& o : optimizations(state, arch)) {
    candidate c{std::move(o)};
    if (const auto it = follow.find(c.opt.technique); it != follow.end()) c.follow_on = it->second;
    cands.push_back(std::move(c));
  }
  // Exploration and retirement look at the state's record over every architecture.
  auto& s = db_->cached(
      "SELECT t.name, g.attempts, g.successes, g.credit_steps, g.credit_gains FROM opt_stats g "
      "JOIN techniques t ON t.id = g.technique_id WHERE g.state_id = ? AND g.arch = 'all'");
  sql::statement_use use(s);
  s.bind(1, sid);
  while (s.step()) {
    const std::string name = s.get_text(0);
    for (auto& c : cands)
      if (c.opt.technique == name) {
        c.attempts_in_state = s.get_int(1);
        c.successes_in_state = s.get_int(2);
        c.steps_in_state = s.get_int(3);
        c.gains_in_state = s.get_int(4);
      }
  }
  return cands;
}

std::map<std::string, double> knowledge_base::follow_on(const std::string& state, const std::string& arch) {
  // A step is worth what it keeps and what it opens: the paper's "prep -> compute" sequences
  // (tiling, then tensor cores) gain little at the first step and much at the second. The
  // second's worth is the best credit learnt in the state reached, discounted once; a state
  // with no credit, or the same state again, adds nothing.
  constexpr double discount = 0.5;
  std::map<std::string, double> best_in;  // state reached -> best credited mean log gain there
  auto best_credit = [&](const std::string& to) {
    if (const auto it = best_in.find(to); it != best_in.end()) return it->second;
    double best = 0;
    for (const auto& o : optimizations(to, arch))
      if (o.statistics.credit.steps > 0) best = std::max(best, credit_mean_log_gain(o.statistics.credit, o.prior_speedup));
    return best_in[to] = best;
  };
  std::map<std::string, std::pair<double, std::int64_t>> sums;  // technique -> (count-weighted value, count)
  for (const auto& t : transitions_from(state)) {
    const double value = t.to_state == state ? 0.0 : best_credit(t.to_state);
    sums[t.technique].first += static_cast<double>(t.count) * value;
    sums[t.technique].second += t.count;
  }
  std::map<std::string, double> out;
  for (const auto& [technique, s] : sums)
    if (s.second > 0 && s.first > 0) out[technique] = discount * s.first / static_cast<double>(s.second);
  return out;
}

std::optional<state_match> knowledge_base::match_state(const kernel_evidence& evidence, const std::string& arch) {
  return matcher_->best(*db_, evidence, arch);
}

std::optional<state_match> knowledge_base::match_state(const std::string& primary,
                                                       const std::vector<std::string>& secondary,
                                                       const std::string& arch) {
  return match_state(evidence_of(primary, secondary), arch);
}

namespace {

// How strongly the evidence points at a component state: the primary's weight for the state of
// the primary alone, else the heaviest characteristic it names.
double component_weight(knowledge_base& kb, const std::string& name, const kernel_evidence& e) {
  const auto st = kb.find_state(name);
  if (!st) return 0;
  if (st->secondary.empty()) return e.primary_weight;
  double w = 0;
  for (const auto& c : st->secondary) w = std::max(w, e.weight_of(c));
  return w;
}

}  // namespace

std::vector<optimization> knowledge_base::optimizations_for(const state_match& match, const kernel_evidence& evidence,
                                                            const std::string& arch) {
  std::vector<optimization> out;
  if (find_state(match.state)) {
    for (auto& o : optimizations(match.state, arch))
      if (fits(o.technique, evidence)) out.push_back(std::move(o));
    return out;
  }
  // A discovered state not stored yet: its components' techniques, ranked by the evidence behind
  // the component times the gain predicted there (a technique predicted to slow down goes last).
  std::vector<std::pair<double, optimization>> ranked;
  for (const auto& c : match.components) {
    const double w = component_weight(*this, c, evidence);
    for (auto& o : optimizations(c, arch)) {
      if (!fits(o.technique, evidence)) continue;
      if (std::any_of(ranked.begin(), ranked.end(), [&](const auto& r) { return r.second.technique == o.technique; }))
        continue;
      o.note = "from " + c + (o.note.empty() ? std::string() : ": " + o.note);
      ranked.emplace_back(w * std::log(std::max(o.predicted_speedup, 1e-9)), std::move(o));
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& r : ranked) out.push_back(std::move(r.second));
  return out;
}

std::string knowledge_base::adopt_discovered(const state_match& match, const kernel_evidence& evidence) {
  if (!match.discovered || find_state(match.state)) return match.state;
  require_writable();
  const auto opts = optimizations_for(match, evidence, all_archs);
  std::string from;
  for (const auto& c : match.components) from += (from.empty() ? "" : ", ") + c;
  state st;
  st.name = match.state;
  st.primary_bottleneck = evidence.primary;
  st.secondary = evidence.secondary_names();
  st.origin = "discovered";
  st.description = "Discovered: no known state explains enough of this profile (" + evidence.primary +
                   (st.secondary.empty() ? std::string() : " with " + st.secondary.front() +
                                                               (st.secondary.size() > 1 ? " and more" : "")) +
                   "); starts with the techniques of " + (from.empty() ? std::string("no known state") : from) + ".";
  const update_cause cause{"discovered", "state " + match.state + " composed from " + from, {}};
  sql::write_transaction(*db_, [&] {
    change_log log(*db_);
    const std::int64_t sid = ensure_state(st.name, log);
    log.track("states", {{"id", sid}}, [&] {
      auto& s = db_->cached(
          "UPDATE states SET primary_bottleneck = ?, secondary = ?, criteria = '[]', scope = 'all', "
          "origin = ?, description = ?, notes = '' WHERE id = ?");
      s.bind(1, st.primary_bottleneck).bind(2, nlohmann::json(st.secondary).dump()).bind(3, st.origin);
      s.bind(4, st.description).bind(5, sid).run();
    });
    for (const auto& o : opts) {
      const auto tid = technique_id(o.technique);
      log.track("optimizations", {{"state_id", sid}, {"technique_id", tid}}, [&] {
        auto& s = db_->cached(
            "INSERT INTO optimizations(state_id, technique_id, prior_speedup, note, note_needs) "
            "VALUES(?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
        s.bind(1, sid).bind(2, tid).bind(3, o.prior_speedup).bind(4, o.note);
        s.bind(5, nlohmann::json(o.note_needs).dump()).run();
      });
    }
    log.commit(cause);
  });
  matcher_->invalidate();
  return st.name;
}

std::vector<optimization> knowledge_base::static_strategies(const kernel_evidence& evidence, const std::string& arch,
                                                            std::size_t top) {
  std::map<std::string, optimization> best;
  for (const auto& st : states()) {
    if (st.scope != all_archs && st.scope != arch) continue;
    for (auto& o : optimizations(st.name, arch)) {
      if (needs_of(o.technique).empty() || !fits(o.technique, evidence)) continue;
      auto it = best.find(o.technique);
      if (it == best.end() || o.predicted_speedup > it->second.predicted_speedup) best[o.technique] = std::move(o);
    }
  }
  std::vector<optimization> out;
  for (auto& [name, o] : best) out.push_back(std::move(o));
  std::stable_sort(out.begin(), out.end(),
                   [](const optimization& a, const optimization& b) { return a.predicted_speedup > b.predicted_speedup; });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace kblaster::kb
