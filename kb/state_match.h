// Maps a performance signature (primary bottleneck, secondary characteristics, architecture)
// to the closest KB state, so that the engine's deterministic classifier can name a state.
#pragma once

#include "kb/sqlite.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::kb {

/// The names the classifier uses for primary bottlenecks.
const std::vector<std::string>& primary_bottlenecks();
/// The names the classifier uses for secondary characteristics.
const std::vector<std::string>& secondary_characteristics();

/// What a state looks like to the matcher.
struct state_signature {
  std::int64_t id = 0;
  std::string name;
  std::string primary;
  std::vector<std::string> secondary;  ///< sorted, unique
  std::string scope;
  std::string family;                  ///< memory, compute, latency or the primary itself
  std::uint64_t mask = 0;              ///< secondaries as bits (see state_matcher)
};

/// The best state for a signature.
struct state_match {
  std::string state;
  double score = 0;  ///< 0..1: 0.95 for an exact match of an all-architecture state, 1 for one of `arch`
  bool exact = false;          ///< same primary and the same set of secondaries
};

/// The family of a primary bottleneck used for partial credit: memory, compute or latency.
std::string family_of(const std::string& primary);

/// Similarity of a state to a signature in [0, 1], or a negative value when the state's scope
/// is another architecture. Primary: 0.5 when equal, 0.2 within a family (memory, compute,
/// latency); secondaries: 0.45 times their Jaccard index; 0.05 for a scope equal to `arch`.
double match_score(const state_signature& s, const std::string& primary,
                   const std::vector<std::string>& secondary_sorted, const std::string& arch);

/// Caches the signatures of every state; reloads when another connection changed the file
/// (PRAGMA data_version) or after invalidate(). Not thread-safe.
class state_matcher {
 public:
  std::optional<state_match> best(sql::database& db, const std::string& primary,
                                  std::vector<std::string> secondary, const std::string& arch);
  void invalidate() noexcept { loaded_ = false; }

 private:
  void reload(sql::database& db);
  std::vector<state_signature> cache_;
  // Secondary names interned to bits, so a match over 10,000 states is a popcount per state.
  // With more than 64 distinct names the exact (sorted vector) comparison is used instead.
  std::vector<std::string> bit_names_;
  bool masks_valid_ = true;
  std::int64_t data_version_ = -1;
  std::int64_t own_changes_ = -1;  // sqlite3_total_changes64 of the connection at the last load
  bool loaded_ = false;
};

}  // namespace kblaster::kb
