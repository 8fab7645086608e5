// Signature -> KB evidence.
#include "engine/state/state_evidence.h"

#include "engine/state/state_classifier.h"

#include <algorithm>

namespace kblaster::engine {

kb::kernel_evidence kb_evidence(const performance_signature& s) {
  const classifier_thresholds t;
  kb::kernel_evidence e;
  e.primary = s.primary;
  e.measured = !s.static_only && s.primary != primary::unknown;
  e.primary_weight = e.measured ? s.primary_weight : 0.0;
  for (const auto& c : s.secondary) {
    double w = kb::default_characteristic_weight;
    if (c.estimated_speedup) w = std::clamp(*c.estimated_speedup / 100.0, 0.0, 1.0);
    else if (c.name == secondary::launch_bound && s.sol.duration_us)
      // 2.9 us of a 5 us overhead: 0.42; a kernel near the overhead itself weighs the default.
      w = std::clamp(1.0 - *s.sol.duration_us / t.launch_bound_us, kb::default_characteristic_weight, 1.0);
    e.secondary.push_back({c.name, w});
  }
  if (!e.measured) return e;  // static: only what ptxas and occupancy say; no run, no launch facts
  if (s.launches_in_run > 1) e.facts.insert(kb::fact::several_launches);
  if (s.sol.duration_us && *s.sol.duration_us < t.launch_bound_us) e.facts.insert(kb::fact::short_launch);
  if (s.matrix_product || looks_like_matrix_product(s.function.empty() ? s.name : s.function))
    e.facts.insert(kb::fact::matrix_product);
  if (s.global_load_reuse && *s.global_load_reuse >= t.data_reuse_ratio) e.facts.insert(kb::fact::data_reuse);
  const auto sms = s.launch.sm_count ? s.launch.sm_count : s.device.sm_count;
  if (sms && *sms > 0 && static_cast<double>(s.launch.grid.total()) >= t.many_blocks_per_sm * *sms)
    e.facts.insert(kb::fact::many_blocks);
  return e;
}

}  // namespace kblaster::engine
