// What is known of one kernel, as the KB reads it: the primary bottleneck and the secondary
// characteristics each weighed by its evidence, and facts about its launches and its source.
// The state matcher (state_match.h) weighs states by it; technique preconditions (the seed's
// "$techniques".NAME.needs) are checked against it at selection time.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::kb {

/// Facts beside the classifier's characteristics that technique preconditions name.
namespace fact {
inline constexpr const char* several_launches = "several_launches";  ///< the run launched kernels more than once
inline constexpr const char* short_launch = "short_launch";  ///< a launch shorter than its launch overhead
inline constexpr const char* matrix_product = "matrix_product";  ///< the kernel computes a matrix product
inline constexpr const char* data_reuse = "data_reuse";  ///< global loads re-read data (L1 sectors per DRAM sector >= 2)
inline constexpr const char* many_blocks = "many_blocks";  ///< the grid holds at least 8 blocks per SM (several waves)
}  // namespace fact

/// One secondary characteristic the kernel shows, weighed by its evidence.
struct observed_characteristic {
  std::string name;
  double weight = 0;  ///< 0..1: ncu's estimated speedup over 100 where a rule gave one, else a default
};

/// A kernel as the KB sees it. `measured` is false for a static profile (ptxas and occupancy
/// only): no performance state can be claimed then, only facts about resources.
struct kernel_evidence {
  std::string primary;           ///< primary bottleneck ("unknown" for a static profile)
  double primary_weight = 0.5;   ///< 0..1: how strongly the profile shows it
  std::vector<observed_characteristic> secondary;
  std::set<std::string> facts;   ///< fact:: names that hold
  bool measured = true;

  /// True when `name` is the primary, a characteristic shown or a fact that holds.
  bool shows(std::string_view name) const;
  /// The weight of a characteristic shown (0 when it is not shown).
  double weight_of(std::string_view characteristic) const;
  /// Characteristic names, sorted and unique.
  std::vector<std::string> secondary_names() const;
};

/// Default weight of a characteristic assigned on metric thresholds without an ncu estimate.
inline constexpr double default_characteristic_weight = 0.3;

/// Evidence with default weights for a signature given by names alone (the CLI's `kb match`,
/// tests, callers that have no figures).
kernel_evidence evidence_of(const std::string& primary, const std::vector<std::string>& secondary);

/// What a technique needs before it may be offered: every clause must hold, a clause holds when
/// any of its names is shown (kernel_evidence::shows). No clause: it fits every kernel.
struct technique_needs {
  std::vector<std::vector<std::string>> all_of_any_of;
  bool empty() const noexcept { return all_of_any_of.empty(); }
};

/// The needs the shipped KB records for `technique` ("$techniques".NAME.needs in the seed);
/// none for a technique the seed does not know (one the agents discovered).
const technique_needs& needs_of(std::string_view technique);

/// True when every clause of `technique`'s needs holds for `e`.
bool fits(std::string_view technique, const kernel_evidence& e);

/// The first clause of `technique`'s needs that `e` does not meet, in words ("needs one of:
/// several_launches, short_launch"); nullopt when it fits.
std::optional<std::string> unmet_need(std::string_view technique, const kernel_evidence& e);

}  // namespace kblaster::kb
