// Compact renderings of KB entries for prompts.
#include "engine/agents/kb_context.h"
#include "support/text.h"

#include "kb/note_needs.h"
#include "kb/state_match.h"

#include <algorithm>
#include <cstdio>

namespace kblaster::engine::agents {


std::string render_state(const kb::state& s) {
  std::string sec;
  for (const auto& x : s.secondary) sec += (sec.empty() ? "" : ", ") + x;
  return s.name + " (" + s.primary_bottleneck + (sec.empty() ? "" : "; " + sec) + "): " + s.description;
}

std::vector<kb::state> nearby_states(kb::knowledge_base& kb, const std::string& matched, const std::string& primary,
                                     const std::vector<std::string>& secondary, std::size_t limit) {
  std::vector<std::pair<double, kb::state>> scored;
  const std::string family = kb::family_of(primary);
  for (auto& s : kb.states()) {
    double score = s.name == matched ? 100 : 0;
    if (s.primary_bottleneck == primary) score += 2;
    else if (kb::family_of(s.primary_bottleneck) == family) score += 1;
    else if (s.name != matched) continue;
    for (const auto& x : s.secondary)
      if (std::find(secondary.begin(), secondary.end(), x) != secondary.end()) score += 0.5;
    scored.emplace_back(score, std::move(s));
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<kb::state> out;
  for (auto& [score, s] : scored) {
    if (out.size() >= limit) break;
    out.push_back(std::move(s));
  }
  return out;
}

std::string render_optimizations(const std::vector<kb::optimization>& opts, std::size_t limit,
                                 const std::optional<std::set<std::string>>& operations) {
  if (opts.empty()) return "(none known for this state)\n";
  std::string out = "technique | prior | predicted | confidence | attempts (ok/fail) | note\n";
  for (std::size_t i = 0; i < opts.size() && i < limit; ++i) {
    const auto& o = opts[i];
    out += o.technique + " | " + support::fixed_text(o.prior_speedup, 2) + "x | " + support::fixed_text(o.predicted_speedup, 2) + "x | " +
           support::fixed_text(o.confidence, 2) + " | " + std::to_string(o.statistics.attempts) + " (" +
           std::to_string(o.statistics.successes) + "/" +
           std::to_string(o.statistics.compile_failures + o.statistics.incorrect) + ") | " +
           kb::shown_note(o, operations) + "\n";
  }
  if (opts.size() > limit) out += "(" + std::to_string(opts.size() - limit) + " more with lower predictions)\n";
  return out;
}

std::string render_catalogue(const std::vector<kb::technique>& techniques) {
  std::string out, line;
  for (const auto& t : techniques) {
    const std::string item = t.name + " (" + t.category + ")";
    if (line.size() + item.size() > 110) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + item;
  }
  return out + line + "\n";
}

std::string render_lessons(kb::knowledge_base& kb, const std::string& state, const std::string& technique,
                           std::size_t limit) {
  std::vector<kb::lesson> picked;
  try {
    for (auto& l : kb.lessons(state))
      if (l.technique.empty() || l.technique == technique) picked.push_back(std::move(l));
  } catch (const kb::kb_error&) {
    return "(none)\n";
  }
  if (picked.empty()) return "(none)\n";
  const std::size_t first = picked.size() > limit ? picked.size() - limit : 0;
  std::string out;
  for (std::size_t i = first; i < picked.size(); ++i)
    out += "- " + (picked[i].technique.empty() ? std::string() : "[" + picked[i].technique + "] ") +
           (picked[i].arch == kb::all_archs ? std::string() : "[" + picked[i].arch + "] ") + picked[i].text + "\n";
  return out;
}

std::string render_attempts(const std::vector<kb::attempt>& attempts) {
  std::string out = "id | task | state before -> after | technique | predicted | measured | outcome\n";
  for (const auto& a : attempts) {
    const std::string outcome = !a.compile_ok ? "compile_error" : !a.correct ? "incorrect" : "correct";
    out += std::to_string(a.id) + " | " + a.task + " | " + a.state_before + " -> " +
           (a.state_after.empty() ? "?" : a.state_after) + " | " + a.technique + " | " +
           (a.predicted_speedup ? support::fixed_text(*a.predicted_speedup, 2) + "x" : "-") + " | " +
           (a.measured_speedup ? support::fixed_text(*a.measured_speedup, 2) + "x" : "-") + " | " + outcome + "\n";
  }
  return out;
}

}  // namespace kblaster::engine::agents
