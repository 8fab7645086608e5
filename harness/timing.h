// One measurement: the warm-up, the sampling loop and its statistics, under the timing policy
// (engine/task/timing_policy.h, where the policy and the reasons for it are written once).
#pragma once

#include "engine/task/timing_policy.h"
#include "harness/device.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace kblaster::harness {

using engine::timing_policy;
namespace timing_rules = engine::timing_rules;

/// The outcome of one measurement.
struct timing_stats {
  int samples = 0;
  double median_ms = 0, q1_ms = 0, q3_ms = 0, iqr_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  double rsd = 0;           // relative standard deviation of the samples
  double median_se = 0;     // the median's relative standard error (see timing_policy)
  double host_median_ms = 0;  // host clock around call + cudaDeviceSynchronize
  double host_min_ms = 0;
  bool converged = false;   // rsd reached the target before the caps
  bool stopped_slower = false;  // stopped early: clearly slower than the policy's slower_than_ms
  bool l2_flushed = false;
  double drift = 0;         // median of the last third / median of the first third - 1
  bool throttled = false;   // the GPU reported clock throttling, or the samples drifted by > 5 %
  int sm_clock_start_mhz = -1, sm_clock_end_mhz = -1;
  std::string note;
  nlohmann::json to_json() const;
};

/// One sample: the time of the measured region and the host time around it.
struct timed_sample {
  double ms = 0;
  double host_ms = 0;
};

/// Calls `call` for the policy's warm-up: `warmup` times, or fewer once `warmup_seconds` have
/// passed after the first (each call must return with its work done, for the clock to see it).
void warm_up(const timing_policy& policy, const std::function<void()>& call);

/// The sampling loop and its statistics, for a caller that takes each sample itself (the judge
/// timing batches of calls, harness/runner_timing.cpp): no warm-up, `sample` is called until the policy stops.
timing_stats measure_samples(device_context& dev, const std::function<timed_sample()>& sample, const timing_policy& policy);

}  // namespace kblaster::harness
