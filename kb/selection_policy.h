// Selection policies: which techniques to try next in a state. Pure functions over candidates
// and a seeded random source, so that a selection is reproducible from its seed.
#pragma once

#include "kb/evidence.h"
#include "kb/random.h"
#include "kb/types.h"

#include <optional>
#include <string_view>

namespace kblaster::kb {

/// How to choose among candidate techniques.
enum class selection_policy {
  /// The default (issue 49): an upper confidence bound over the search credit, what steps of a
  /// technique kept (kb::search_credit), plus what its learnt transitions lead to. Where no
  /// technique of the state has credit yet, the weighted draw over the priors decides.
  ucb,
  weighted,  ///< the paper's: weighted random choice among the top by predicted gain
  /// The weighted draw over the mean of every variant tried (kb::variant_mean_speedup), as
  /// before issue 49: kept as the experiment's baseline rule.
  mean,
  thompson,  ///< sample each technique's posterior gain, take the best samples
};

/// Parses "ucb", "weighted", "mean" or "thompson".
std::optional<selection_policy> parse_policy(std::string_view name);
std::string_view to_string(selection_policy p) noexcept;

/// What to select; defaults are the ones the engine uses.
struct selection_request {
  std::string state;
  std::string arch;          ///< restrict statistics to this family; empty or "all" for all
  std::size_t k = 1;         ///< how many distinct techniques to return
  selection_policy policy = selection_policy::ucb;
  std::uint64_t seed = 0;
  double temperature = 0.5;  ///< weighted: weights are exp(log(gain) / temperature); <= 0 is greedy
  std::size_t pool = 5;      ///< weighted: sample among the top `pool` by predicted gain (at least k)
  double explore_probability = 0.25;  ///< with k == 1, chance that the pick goes to an untried technique
  int retire_after = 3;      ///< attempts (steps, once credited) without a gain after which a technique is dropped
  /// ucb: the exploration bonus, in log-speedup per step: c * sqrt(ln(1 + N) / (1 + n)), N the
  /// state's credited steps (decayed), n the technique's.
  double exploration = 0.25;
  /// What is known of the kernel: techniques whose needs do not hold for it are not offered
  /// (kb/evidence.h). Without it every technique of the state is a candidate.
  std::optional<kernel_evidence> evidence;
};

/// A candidate as the policy sees it.
struct candidate {
  optimization opt;
  std::int64_t attempts_in_state = 0;   ///< over every architecture
  std::int64_t successes_in_state = 0;
  std::int64_t steps_in_state = 0;      ///< credited steps, over every architecture
  std::int64_t gains_in_state = 0;      ///< of them, steps that gained
  /// What the step after this one is expected to keep, in log speedup: the learnt transitions
  /// from this state under this technique, weighted by their counts, each to the best credit of
  /// the state it reaches, discounted (kb::knowledge_base::candidates).
  double follow_on = 0;
};

/// One chosen technique.
struct choice {
  optimization opt;
  double score = 0;     ///< predicted gain (weighted) or sampled gain (thompson)
  std::string reason;   ///< "exploit", "explore" (untried), or "fallback" (all retired)
};

/// Chooses up to request.k distinct candidates. Deterministic for a given request.seed.
std::vector<choice> choose(std::vector<candidate> candidates, const selection_request& request);

}  // namespace kblaster::kb
