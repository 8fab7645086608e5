// Names the state of a performance signature from the signature alone, before any KB is asked
// (profiles, hovers, the evaluator's snapshots). The KB's matching of a signature to its own
// states is another thing, kb::state_matcher (used through knowledge_base::match_state): the two
// are named apart so that one word means one thing.
#pragma once

#include "engine/state/performance_signature.h"

#include <memory>
#include <string>

namespace kblaster::engine {

/// The state a signature belongs to.
struct named_state {
  std::string state;        // KB state key, e.g. "memory_bound_dram+uncoalesced_global_access"
  std::string description;  // one line for people and prompts
  double confidence = 1.0;  // 1 for an exact match of the deterministic signature
};

/// Signature → KB state. Implementations must be deterministic; thread-safe when const.
class state_namer {
 public:
  virtual ~state_namer() = default;
  /// The state for `s`.
  virtual named_state match(const performance_signature& s) const = 0;
};

/// Needs no KB: the state key is the primary bottleneck joined with the secondary
/// characteristics in sorted order ("primary+sec1+sec2").
class signature_state_namer final : public state_namer {
 public:
  named_state match(const performance_signature& s) const override;
};

/// The namer used when none is configured.
std::unique_ptr<state_namer> make_default_state_namer();

}  // namespace kblaster::engine
