// Notes' operation needs (rules in note_needs.h).
#include "kb/note_needs.h"

#include "kb/seed.h"

#include <algorithm>

namespace kblaster::kb {

const std::vector<std::string>& note_operations() {
  static const std::vector<std::string> names{note_operation::reduction, note_operation::transcendental,
                                              note_operation::division, note_operation::per_thread_array,
                                              note_operation::shared_memory};
  return names;
}

std::vector<std::vector<std::string>> clauses_from_json(const nlohmann::json& clauses) {
  std::vector<std::vector<std::string>> out;
  if (!clauses.is_array()) return out;
  for (const auto& clause : clauses) {
    std::vector<std::string> any;
    if (clause.is_string()) any.push_back(clause.get<std::string>());
    else if (clause.is_array())
      for (const auto& x : clause)
        if (x.is_string()) any.push_back(x.get<std::string>());
    if (!any.empty()) out.push_back(std::move(any));
  }
  return out;
}

bool note_fits(const optimization& o, const std::optional<std::set<std::string>>& operations) {
  if (!operations) return true;
  return std::all_of(o.note_needs.begin(), o.note_needs.end(), [&](const std::vector<std::string>& clause) {
    return std::any_of(clause.begin(), clause.end(), [&](const std::string& n) { return operations->count(n) > 0; });
  });
}

std::string shown_note(const optimization& o, const std::optional<std::set<std::string>>& operations) {
  return note_fits(o, operations) ? o.note : std::string();
}

namespace {

// Seed notes as they read before issue 36, by (state, technique): written for the kernel that
// suggested them rather than for the state.
struct old_note {
  const char* state;
  const char* technique;
  const char* text;
};
constexpr old_note rewritten[] = {
    {"uncoalesced_global_memory", "data_layout_transformation", "transpose once through shared memory"},
    {"uncoalesced_global_memory", "shared_memory_tiling", "stage a tile, read it transposed from shared memory"},
    {"shared_memory_bank_conflicted", "warp_shuffle_reduction", "only for reductions through shared memory"},
    {"fp32_compute_saturated", "fast_math_intrinsics", "transcendentals dominate"},
    {"fp32_compute_saturated", "index_math_strength_reduction", "integer division and modulo are slow"},
    {"undersized_grid_uncoalesced", "memory_coalescing",
     "give each row a warp or a block: lanes stride along the row, so loads coalesce and the grid grows to one block "
     "per row"},
    {"undersized_grid_uncoalesced", "warp_shuffle_reduction", "the row's max and sum across the lanes that now share it"},
    {"undersized_grid_uncoalesced", "block_size_tuning",
     "smaller blocks spread the rows over more SMs: first aid that keeps one thread per row"},
    {"undersized_grid_uncoalesced", "vectorized_memory_access", "after coalescing: float4 along the row"},
    {"balanced_near_roofline", "tensor_cores_wmma", "if matmul-like and tolerance allows"},
};

}  // namespace

void upgrade_seed_notes(sql::database& db) {
  const auto seed = nlohmann::json::parse(seed_kb_json(), nullptr, false);
  if (!seed.is_object()) return;
  auto& current = db.cached(
      "SELECT o.note FROM optimizations o JOIN states s ON s.id = o.state_id JOIN techniques t ON t.id = o.technique_id "
      "WHERE s.name = ?1 AND t.name = ?2");
  auto& update = db.cached(
      "UPDATE optimizations SET note = ?3, note_needs = ?4 WHERE state_id = (SELECT id FROM states WHERE name = ?1) "
      "AND technique_id = (SELECT id FROM techniques WHERE name = ?2)");
  for (const auto& [state, body] : seed.items()) {
    if (state.empty() || state.front() == '$' || !body.is_object() || !body.contains("optimizations")) continue;
    for (const auto& o : body["optimizations"]) {
      if (!o.is_object() || !o.contains("technique") || !o["technique"].is_string()) continue;
      const std::string technique = o["technique"].get<std::string>();
      const std::string note = o.value("note", "");
      std::string stored;
      {
        sql::statement_use use(current);
        current.bind(1, state).bind(2, technique);
        if (!current.step()) continue;  // not in this KB (a state or technique it never had)
        stored = current.get_text(0);
      }
      const bool as_seeded = stored == note;
      const std::string& state_name = state;  // a structured binding cannot be captured before C++20 (clang)
      const bool old_text = std::any_of(std::begin(rewritten), std::end(rewritten), [&](const old_note& r) {
        return state_name == r.state && technique == r.technique && stored == r.text;
      });
      if (!as_seeded && !old_text) continue;  // edited since: its needs are not the seed's to say
      const auto needs = nlohmann::json(clauses_from_json(o.value("note_needs", nlohmann::json::array())));
      sql::statement_use use(update);
      update.bind(1, state).bind(2, technique).bind(3, note).bind(4, needs.dump()).run();
    }
  }
}

}  // namespace kblaster::kb
