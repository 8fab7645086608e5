// Kernel evidence and the technique preconditions read from the embedded seed KB.
#include "kb/evidence.h"

#include "kb/note_needs.h"
#include "kb/seed.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace kblaster::kb {

bool kernel_evidence::shows(std::string_view name) const {
  if (name == primary) return true;
  if (facts.count(std::string(name))) return true;
  return weight_of(name) > 0;
}

double kernel_evidence::weight_of(std::string_view characteristic) const {
  for (const auto& c : secondary)
    if (c.name == characteristic) return c.weight;
  return 0;
}

std::vector<std::string> kernel_evidence::secondary_names() const {
  std::vector<std::string> out;
  for (const auto& c : secondary) out.push_back(c.name);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

kernel_evidence evidence_of(const std::string& primary, const std::vector<std::string>& secondary) {
  kernel_evidence e;
  e.primary = primary;
  e.measured = primary != "unknown" && !primary.empty();
  for (const auto& s : secondary) e.secondary.push_back({s, default_characteristic_weight});
  return e;
}

namespace {

// Parsed once from the embedded seed: "$techniques": {NAME: {"needs": [["a", "b"], ["c"]]}}.
// The seed is checked by the KB's tests, so a malformed entry here is a build-time mistake;
// it is read as "no needs" rather than failing every selection.
const std::map<std::string, technique_needs, std::less<>>& seed_needs() {
  static const auto table = [] {
    std::map<std::string, technique_needs, std::less<>> out;
    const auto doc = nlohmann::json::parse(seed_kb_json(), nullptr, false);
    if (!doc.is_object() || !doc.contains("$techniques") || !doc["$techniques"].is_object()) return out;
    for (const auto& [name, t] : doc["$techniques"].items()) {
      if (!t.is_object() || !t.contains("needs") || !t["needs"].is_array()) continue;
      out.emplace(name, technique_needs{clauses_from_json(t["needs"])});
    }
    return out;
  }();
  return table;
}

}  // namespace

const technique_needs& needs_of(std::string_view technique) {
  static const technique_needs none;
  const auto& table = seed_needs();
  const auto it = table.find(technique);
  return it == table.end() ? none : it->second;
}

std::optional<std::string> unmet_need(std::string_view technique, const kernel_evidence& e) {
  for (const auto& clause : needs_of(technique).all_of_any_of) {
    if (std::any_of(clause.begin(), clause.end(), [&](const std::string& n) { return e.shows(n); })) continue;
    std::string words = clause.size() == 1 ? "needs " : "needs one of: ";
    for (std::size_t i = 0; i < clause.size(); ++i) words += (i ? ", " : "") + clause[i];
    return words;
  }
  return std::nullopt;
}

bool fits(std::string_view technique, const kernel_evidence& e) { return !unmet_need(technique, e); }

}  // namespace kblaster::kb
