// Maps a performance signature to a knowledge-base state. The KB defines states' criteria; this
// interface keeps the engine independent of it until the KB is wired in.
#pragma once

#include "engine/state/performance_signature.h"

#include <memory>
#include <string>

namespace kblaster::engine {

/// The state a signature belongs to.
struct state_match {
  std::string state;        // KB state key, e.g. "memory_bound_dram+uncoalesced_global_access"
  std::string description;  // one line for people and prompts
  double confidence = 1.0;  // 1 for an exact match of the deterministic signature
};

/// Signature → KB state. Implementations must be deterministic; thread-safe when const.
class state_matcher {
 public:
  virtual ~state_matcher() = default;
  /// The state for `s`.
  virtual state_match match(const performance_signature& s) const = 0;
};

/// Needs no KB: the state key is the primary bottleneck joined with the secondary
/// characteristics in sorted order ("primary+sec1+sec2").
class signature_state_matcher final : public state_matcher {
 public:
  state_match match(const performance_signature& s) const override;
};

/// The matcher used when none is configured.
std::unique_ptr<state_matcher> make_default_state_matcher();

}  // namespace kblaster::engine
