// Signature-to-state matching over an in-memory cache of state signatures.
#include "kb/state_match.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <bit>

namespace kblaster::kb {

const std::vector<std::string>& primary_bottlenecks() {
  static const std::vector<std::string> names{
      "memory_bound_dram", "memory_bound_l2", "memory_bound_l1", "compute_bound", "latency_bound",
      "small_grid",        "balanced",        "memory_heavy",    "compute_heavy"};
  return names;
}

const std::vector<std::string>& secondary_characteristics() {
  static const std::vector<std::string> names{
      "uncoalesced_global_access",          "shared_memory_bank_conflicts",
      "warp_divergence",                    "occupancy_limited_by_registers",
      "occupancy_limited_by_shared_memory", "occupancy_limited_by_block_size",
      "register_spills",                    "atomic_contention",
      "launch_bound",                       "tensor_cores_unused"};
  return names;
}

std::string family_of(const std::string& primary) {
  if (primary.rfind("memory_", 0) == 0) return "memory";
  if (primary.rfind("compute_", 0) == 0) return "compute";
  if (primary == "latency_bound" || primary == "small_grid") return "latency";
  return primary;
}

double match_score(const state_signature& s, const std::string& primary,
                   const std::vector<std::string>& secondary_sorted, const std::string& arch) {
  const bool any_arch = arch.empty() || arch == "all";
  if (s.scope != "all" && (any_arch || s.scope != arch)) return -1.0;
  double score = 0;
  if (s.primary == primary) score += 0.5;
  else if (family_of(s.primary) == family_of(primary)) score += 0.2;
  std::size_t common = 0;
  {
    auto a = s.secondary.begin();
    auto b = secondary_sorted.begin();
    while (a != s.secondary.end() && b != secondary_sorted.end()) {
      if (*a < *b) ++a;
      else if (*b < *a) ++b;
      else ++common, ++a, ++b;
    }
  }
  const std::size_t unite = s.secondary.size() + secondary_sorted.size() - common;
  score += 0.45 * (unite == 0 ? 1.0 : static_cast<double>(common) / static_cast<double>(unite));
  if (!any_arch && s.scope == arch) score += 0.05;
  return score;
}

void state_matcher::reload(sql::database& db) {
  cache_.clear();
  auto s = db.prepare("SELECT id, name, primary_bottleneck, secondary, scope FROM states");
  while (s.step()) {
    state_signature sig{s.get_int(0), s.get_text(1), s.get_text(2), {}, s.get_text(4), "", 0};
    const auto sec = nlohmann::json::parse(s.get_text(3), nullptr, false);
    if (sec.is_array())
      for (const auto& v : sec)
        if (v.is_string()) sig.secondary.push_back(v.get<std::string>());
    std::sort(sig.secondary.begin(), sig.secondary.end());
    sig.secondary.erase(std::unique(sig.secondary.begin(), sig.secondary.end()), sig.secondary.end());
    sig.family = family_of(sig.primary);
    cache_.push_back(std::move(sig));
  }
  std::sort(cache_.begin(), cache_.end(),
            [](const state_signature& a, const state_signature& b) { return a.name < b.name; });
  bit_names_.clear();
  masks_valid_ = true;
  for (auto& sig : cache_)
    for (const auto& name : sig.secondary) {
      auto it = std::find(bit_names_.begin(), bit_names_.end(), name);
      if (it == bit_names_.end()) {
        if (bit_names_.size() == 64) {
          masks_valid_ = false;
          break;
        }
        it = bit_names_.insert(bit_names_.end(), name);
      }
      sig.mask |= std::uint64_t{1} << (it - bit_names_.begin());
    }
  loaded_ = true;
}

std::optional<state_match> state_matcher::best(sql::database& db, const std::string& primary,
                                               std::vector<std::string> secondary,
                                               const std::string& arch) {
  // data_version changes when another connection commits; total_changes when this one writes,
  // including raw SQL through knowledge_base::db() (the agents' KB edits) that never calls
  // invalidate().
  const std::int64_t version = db.cached("PRAGMA data_version").step()
                                   ? db.cached("PRAGMA data_version").get_int(0)
                                   : -1;
  db.cached("PRAGMA data_version").reset();
  const std::int64_t own_changes = sqlite3_total_changes64(db.handle());
  if (!loaded_ || version != data_version_ || own_changes != own_changes_) {
    reload(db);
    data_version_ = version;
    own_changes_ = own_changes;
  }
  std::sort(secondary.begin(), secondary.end());
  secondary.erase(std::unique(secondary.begin(), secondary.end()), secondary.end());
  const state_signature* best_sig = nullptr;
  double best_score = -1.0;
  if (masks_valid_) {
    // The same score as match_score, with the set operations done on bit masks.
    std::uint64_t q = 0;
    int unknown = 0;  // query names no state has: they only enlarge the union
    for (const auto& name : secondary) {
      const auto it = std::find(bit_names_.begin(), bit_names_.end(), name);
      if (it == bit_names_.end()) ++unknown;
      else q |= std::uint64_t{1} << (it - bit_names_.begin());
    }
    const std::string family = family_of(primary);
    const bool any_arch = arch.empty() || arch == "all";
    for (const auto& sig : cache_) {
      if (sig.scope != "all" && (any_arch || sig.scope != arch)) continue;
      double sc = sig.primary == primary ? 0.5 : sig.family == family ? 0.2 : 0.0;
      const int common = std::popcount(sig.mask & q);
      const int unite = std::popcount(sig.mask | q) + unknown;
      sc += 0.45 * (unite == 0 ? 1.0 : static_cast<double>(common) / unite);
      if (!any_arch && sig.scope == arch) sc += 0.05;
      if (sc > best_score) best_score = sc, best_sig = &sig;  // ties keep the first name
    }
  } else {
    for (const auto& sig : cache_) {
      const double sc = match_score(sig, primary, secondary, arch);
      if (sc > best_score) best_score = sc, best_sig = &sig;
    }
  }
  if (!best_sig || best_score < 0) return std::nullopt;
  return state_match{best_sig->name, best_score,
                     best_sig->primary == primary && best_sig->secondary == secondary};
}

}  // namespace kblaster::kb
