// Maps what is known of a kernel (kernel_evidence: the primary bottleneck and the secondary
// characteristics, each weighed by its evidence) to the KB state that explains it, so that the
// engine's deterministic classifier can name a state. The rules, and what each seeded state
// needs, are written down in kb/seed/states.md.
#pragma once

#include "kb/evidence.h"
#include "kb/sql.h"

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

/// The state for a kernel.
struct state_match {
  std::string state;
  double score = 0;     ///< 0..1: the share of the kernel's evidence the state explains
  bool exact = false;   ///< same primary and the same set of secondaries
  /// No known state explains enough of the evidence: `state` is a discovered one, named by the
  /// signature ("primary+sec1+sec2"), and may not exist in the KB yet.
  bool discovered = false;
  /// For a discovered state: the known states that each explain a part of the evidence (the
  /// primary's state, then one per characteristic, heaviest first), whose techniques it starts
  /// with. For a known state: empty.
  std::vector<std::string> components;
  /// The best known state even when a discovered one was preferred (empty when none applies).
  std::string nearest_known;
};

/// The family of a primary bottleneck: memory, compute or latency (small_grid is latency).
std::string family_of(const std::string& primary);

/// The name a discovered state gets: the primary joined with the sorted characteristics.
std::string discovered_name(const kernel_evidence& e);

/// A characteristic whose evidence weighs less than this (ncu estimates under 15 %) is shown but
/// does not steer the match: a 10 % bank-conflict estimate on a tiled GEMM does not make it a
/// bank-conflict kernel. It still counts for technique preconditions.
inline constexpr double minor_characteristic_weight = 0.15;

/// The share of the evidence below which the best known state is not trusted and a discovered
/// state is returned instead.
inline constexpr double min_explained_share = 0.6;

/// The characteristic of a matrix product done on the FP32 FMA pipes with the tensor cores idle.
inline constexpr const char* tensor_cores_unused = "tensor_cores_unused";

/// tensor_cores_unused weighing this much (the engine weighs it by the FFMA share of the executed
/// instructions: a register-blocked SGEMM 0.69, a naive or shared-memory-tiled GEMM, whose
/// instructions are mostly loads, 0.23-0.37) puts the kernel in a state that names it, of any
/// primary family, before any other: tensor cores are the step, and they change the whole inner
/// loop that the other characteristics describe.
inline constexpr double tensor_core_precedence_weight = 0.5;

/// The share of `e`'s evidence that state `s` explains, or nullopt when `s` may not be matched:
/// its scope is another architecture, its primary is of another family (unless it names
/// tensor_cores_unused and `e` shows it at tensor_core_precedence_weight), one of the two is an
/// undersized grid (small_grid) and the other not, or it names a characteristic `e` does not show. The primary counts with its weight (in full when equal, half
/// within a family), each characteristic the state names with its weight; a state scoped to
/// `arch` gets 0.02 more, so that it wins over an all-architecture twin.
std::optional<double> match_score(const state_signature& s, const kernel_evidence& e, const std::string& arch);

/// Caches the signatures of every state; reloads when another connection changed the file
/// (sql::database::change_counter) or after invalidate(). Not thread-safe.
class state_matcher {
 public:
  /// The state for `e`: the known state explaining most of its evidence when it explains at
  /// least min_explained_share, else a discovered one. nullopt for static evidence (nothing
  /// measured: no state can be claimed) and for a KB without states.
  std::optional<state_match> best(sql::database& db, const kernel_evidence& e, const std::string& arch);
  void invalidate() noexcept { loaded_ = false; }

 private:
  void reload(sql::database& db);
  std::vector<state_signature> cache_;
  // Secondary names interned to bits, so that the "names only what the kernel shows" test over
  // 10,000 states is a mask per state. With more than 64 distinct names, sets are compared.
  std::vector<std::string> bit_names_;
  bool masks_valid_ = true;
  std::int64_t data_version_ = -1;
  bool loaded_ = false;
};

}  // namespace kblaster::kb
