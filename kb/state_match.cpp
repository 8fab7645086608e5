// Evidence-weighted matching of a kernel to a KB state, over an in-memory cache of state
// signatures (rules in state_match.h and kb/seed/states.md).
#include "kb/state_match.h"

#include <nlohmann/json.hpp>

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
      "launch_bound",                       "tensor_cores_unused",
      "integer_overhead"};
  return names;
}

std::string family_of(const std::string& primary) {
  if (primary.rfind("memory_", 0) == 0) return "memory";
  if (primary.rfind("compute_", 0) == 0) return "compute";
  if (primary == "latency_bound" || primary == "small_grid") return "latency";
  return primary;
}

std::string discovered_name(const kernel_evidence& e) {
  std::string name = e.primary;
  for (const auto& s : e.secondary_names()) name += "+" + s;
  return name;
}

namespace {

bool scope_fits(const state_signature& s, const std::string& arch) {
  const bool any_arch = arch.empty() || arch == "all";
  return s.scope == "all" || (!any_arch && s.scope == arch);
}

// A characteristic's weight in matching: 0 when it is not shown or too weakly to steer.
double steering_weight(const kernel_evidence& e, const std::string& name) {
  const double w = e.weight_of(name);
  return w >= minor_characteristic_weight ? w : 0.0;
}

// The names of the characteristics that steer, sorted.
std::vector<std::string> steering_names(const kernel_evidence& e) {
  auto names = e.secondary_names();
  std::erase_if(names, [&](const std::string& n) { return steering_weight(e, n) <= 0; });
  return names;
}

// The evidence's total weight: the primary's and each steering characteristic's.
double total_weight(const kernel_evidence& e) {
  double total = e.primary_weight;
  for (const auto& n : steering_names(e)) total += steering_weight(e, n);
  return total;
}

// The known states whose techniques a discovered state starts with: the state of the primary
// alone (same primary, no characteristic), then for each characteristic (heaviest first) the state that names it with the fewest
// other characteristics, preferring the kernel's primary, then its family.
std::vector<std::string> components_of(const std::vector<state_signature>& cache, const kernel_evidence& e,
                                       const std::string& arch) {
  std::vector<std::string> out;
  auto add = [&](const state_signature* s) {
    if (s && std::find(out.begin(), out.end(), s->name) == out.end()) out.push_back(s->name);
  };
  const std::string family = family_of(e.primary);
  const state_signature* pure = nullptr;
  for (const auto& s : cache) {
    if (!scope_fits(s, arch) || !s.secondary.empty() || s.primary != e.primary) continue;
    if (!pure || s.scope != "all") pure = &s;
  }
  add(pure);
  auto chars = e.secondary;
  std::erase_if(chars, [&](const observed_characteristic& c) { return steering_weight(e, c.name) <= 0; });
  std::stable_sort(chars.begin(), chars.end(),
                   [](const observed_characteristic& a, const observed_characteristic& b) { return a.weight > b.weight; });
  for (const auto& c : chars) {
    const state_signature* best = nullptr;
    auto rank = [&](const state_signature& s) {
      // Fewer other characteristics first; then the kernel's primary, then its family.
      return std::make_tuple(s.secondary.size(), s.primary == e.primary ? 0 : s.family == family ? 1 : 2);
    };
    for (const auto& s : cache) {
      if (!scope_fits(s, arch) || !std::binary_search(s.secondary.begin(), s.secondary.end(), c.name)) continue;
      // Every other characteristic it names must be shown too: it speaks of this kernel.
      if (!std::all_of(s.secondary.begin(), s.secondary.end(),
                       [&](const std::string& n) { return steering_weight(e, n) > 0; }))
        continue;
      if (!best || rank(s) < rank(*best)) best = &s;
    }
    add(best);
  }
  return out;
}

}  // namespace

bool names_tensor_cores(const state_signature& s) {
  return std::binary_search(s.secondary.begin(), s.secondary.end(), std::string(tensor_cores_unused));
}

std::optional<double> match_score(const state_signature& s, const kernel_evidence& e, const std::string& arch) {
  if (!scope_fits(s, arch)) return std::nullopt;
  const bool product_on_fma = e.weight_of(tensor_cores_unused) >= tensor_core_precedence_weight;
  if (family_of(s.primary) != family_of(e.primary) && !(product_on_fma && names_tensor_cores(s))) return std::nullopt;
  // An undersized grid is a measured fact of the launch (under one wave), not a degree of
  // latency: a state that says the grid cannot fill the GPU never explains a kernel whose grid
  // does (a warp-per-row SpMV of 12,500 blocks is not an undersized grid), and a full grid's
  // latency states never explain an undersized one.
  if ((s.primary == "small_grid") != (e.primary == "small_grid")) return std::nullopt;
  // The same primary in full; another memory level of the same bound (L1 for DRAM) at 3/4;
  // another primary of the family (memory_heavy for memory_bound_dram) at half.
  const bool both_levels = s.primary.rfind("memory_bound_", 0) == 0 && e.primary.rfind("memory_bound_", 0) == 0;
  double explained = (s.primary == e.primary ? 1.0 : both_levels ? 0.75 : 0.5) * e.primary_weight;
  for (const auto& n : s.secondary) {
    const double w = steering_weight(e, n);
    if (w <= 0) return std::nullopt;  // a characteristic the kernel does not show never decides
    explained += w;
  }
  const double total = total_weight(e);
  double share = total > 0 ? explained / total : 0;
  if (s.scope != "all") share += 0.02;
  return share;
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

std::optional<state_match> state_matcher::best(sql::database& db, const kernel_evidence& e, const std::string& arch) {
  if (!e.measured) return std::nullopt;
  // Changes when another connection commits and when this one writes, including raw SQL
  // through knowledge_base::db() (the agents' KB edits) that never calls invalidate().
  const std::int64_t version = db.change_counter();
  if (!loaded_ || version != data_version_) {
    reload(db);
    data_version_ = version;
  }
  if (cache_.empty()) return std::nullopt;
  const auto names = steering_names(e);
  // The characteristics that steer, as bits: a state naming any other bit is skipped at once.
  std::uint64_t shown = 0;
  if (masks_valid_)
    for (const auto& n : names) {
      const auto it = std::find(bit_names_.begin(), bit_names_.end(), n);
      if (it != bit_names_.end()) shown |= std::uint64_t{1} << (it - bit_names_.begin());
    }
  const state_signature* best_sig = nullptr;
  double best_score = -1.0;
  for (const auto& sig : cache_) {
    if (masks_valid_ && (sig.mask & ~shown) != 0) continue;
    const auto sc = match_score(sig, e, arch);
    if (sc && *sc > best_score + 1e-12) best_score = *sc, best_sig = &sig;  // ties keep the first name
  }
  state_match m;
  // A matrix product that spends most of its instructions on FP32 FMAs belongs to the tensor-core
  // states, whatever else its profile shows: moving it to tensor cores replaces the inner loop
  // whose bank conflicts, occupancy and latency the other characteristics describe.
  if (e.weight_of(tensor_cores_unused) >= tensor_core_precedence_weight) {
    const state_signature* product = nullptr;
    double product_score = -1.0;
    for (const auto& sig : cache_) {
      if (!names_tensor_cores(sig)) continue;
      const auto sc = match_score(sig, e, arch);
      if (sc && *sc > product_score + 1e-12) product_score = *sc, product = &sig;
    }
    if (product) {
      m.state = product->name;
      m.score = std::min(product_score, 1.0);
      m.exact = product->primary == e.primary && product->secondary == names;
      m.nearest_known = product->name;
      return m;
    }
  }
  if (best_sig) {
    m.nearest_known = best_sig->name;
    if (best_score >= min_explained_share) {
      m.state = best_sig->name;
      m.score = std::min(best_score, 1.0);
      m.exact = best_sig->primary == e.primary && best_sig->secondary == names;
      return m;
    }
  }
  m.state = discovered_name(e);
  m.score = std::max(best_score, 0.0);
  m.discovered = true;
  m.components = components_of(cache_, e, arch);
  return m;
}

}  // namespace kblaster::kb
