// Ranking of CUDA lines (or SASS instructions) by the costs ncu attributes to them.
#include "engine/profile/source_attribution.h"
#include "support/text.h"

#include <algorithm>
#include <functional>

namespace kblaster::engine {

const char* to_string(hot_reason r) {
  switch (r) {
    case hot_reason::stall_samples: return "stall_samples";
    case hot_reason::uncoalesced_global: return "uncoalesced_global";
    case hot_reason::shared_bank_conflicts: return "shared_bank_conflicts";
  }
  return "stall_samples";
}

namespace {

std::string trim(std::string_view s) { return std::string(support::trim(s, " \t")); }

std::string top_stall_of(const source_metrics& m) {
  std::string best;
  double most = 0;
  for (const auto& [name, v] : m.stalls)
    if (v > most) { most = v; best = name; }
  return best;
}

// One row to rank: a line or an instruction.
struct candidate {
  int line;
  std::string text;
  const source_metrics* metrics;
};

}  // namespace

std::vector<hot_line> attribute_hot_lines(const source_page& page, std::size_t per_reason,
                                          double min_share) {
  std::vector<candidate> rows;
  if (!page.lines.empty()) {
    for (const auto& l : page.lines) rows.push_back({l.line, trim(l.text), &l.metrics});
  } else {
    for (const auto& i : page.instructions) rows.push_back({i.line, trim(i.text), &i.metrics});
  }
  std::vector<hot_line> out;
  if (!page.has_metrics) return out;
  const std::pair<hot_reason, std::function<double(const source_metrics&)>> figures[] = {
      {hot_reason::stall_samples, [](const source_metrics& m) { return m.stall_samples; }},
      {hot_reason::uncoalesced_global, [](const source_metrics& m) { return m.global_excessive_sectors; }},
      {hot_reason::shared_bank_conflicts, [](const source_metrics& m) { return m.shared_excessive_wavefronts; }},
  };
  for (const auto& entry : figures) {
    // Named members, not a structured binding: the sort's lambda captures `figure`.
    const hot_reason reason = entry.first;
    const auto& figure = entry.second;
    double total = 0;
    for (const auto& r : rows) total += figure(*r.metrics);
    if (total <= 0) continue;
    std::vector<const candidate*> ranked;
    for (const auto& r : rows) ranked.push_back(&r);
    std::stable_sort(ranked.begin(), ranked.end(), [&](const candidate* a, const candidate* b) {
      return figure(*a->metrics) > figure(*b->metrics);
    });
    std::size_t taken = 0;
    for (const candidate* r : ranked) {
      const double amount = figure(*r->metrics);
      if (taken >= per_reason || amount / total < min_share) break;
      out.push_back({page.file, r->line, r->text, reason, amount / total, amount,
                     top_stall_of(*r->metrics)});
      ++taken;
    }
  }
  return out;
}

}  // namespace kblaster::engine
