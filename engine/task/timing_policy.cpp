// A request's "timing" object read into the timing policy.
#include "engine/task/timing_policy.h"

#include <algorithm>

namespace kblaster::engine {

timing_policy timing_policy_from_json(const nlohmann::json& timing) {
  timing_policy p;
  if (!timing.is_object()) return p;
  const auto& j = timing;
  p.warmup = std::clamp(j.value("warmup", p.warmup), 0, 1000);
  p.warmup_seconds = std::clamp(j.value("warmup_seconds", p.warmup_seconds), 0.0, 600.0);
  p.min_samples = std::clamp(j.value("min_samples", p.min_samples), 3, 100000);
  p.max_samples = std::clamp(j.value("max_samples", p.max_samples), p.min_samples, 1000000);
  p.max_seconds = std::clamp(j.value("max_seconds", p.max_seconds), 0.01, 600.0);
  p.rsd_target = std::clamp(j.value("rsd_target", p.rsd_target), 1e-5, 1.0);
  p.median_se_target = std::clamp(j.value("median_se_target", p.median_se_target), 0.0, 1.0);
  p.min_samples_for_se = std::clamp(j.value("min_samples_for_se", p.min_samples_for_se), 3, 100000);
  p.slower_than_ms = std::clamp(j.value("slower_than_ms", p.slower_than_ms), 0.0, 1e7);
  p.reference_ms = j.value("reference_ms", p.reference_ms);
  return p;
}

}  // namespace kblaster::engine
