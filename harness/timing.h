// Cold timing in the manner of nvbench: before every sample the L2 is flushed (GPU) and the
// device is idle; a sample is the CUDA-event time on the legacy default stream, which waits for
// the work of every blocking stream (host time on the CPU); the host time of each sample, device
// synchronisation included, is reported beside it so that work hidden on non-blocking streams
// shows. Warm-up first, then samples until the median is known well enough (its relative
// standard error, estimated from the interquartile range, under the target: a few dozen samples
// for a kernel whose samples scatter by a few percent), or the samples themselves scatter less
// than the RSD target, or a cap is reached; median and interquartile range.
#pragma once

#include "harness/device.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace kblaster::harness {

/// The stopping policy of one measurement.
struct timing_policy {
  int warmup = 3;              // calls before sampling, at most
  /// Warm-up ends after its first call once this much time has gone into it: a kernel of a
  /// second (a naive KernelBench GEMM) is warm after one call, and two more would cost seconds.
  double warmup_seconds = 0.05;
  int min_samples = 10;        //
  int max_samples = 5000;      //
  double max_seconds = 2.0;    // cap on sampling time, per measured function [s]
  double rsd_target = 0.005;   // stop when stddev/mean of the samples is under this
  /// Stop when the median's relative standard error (1.253 x IQR/1.349 / sqrt(n) / median, from
  /// at least `min_samples_for_se` samples) is under this: the loop compares medians 1 % apart,
  /// and a 25 us kernel scattering by 3 % reaches it in ~160 samples instead of running to the cap.
  double median_se_target = 0.003;
  int min_samples_for_se = 30;
  /// The time the loop needs a candidate to beat (its current version's median), 0 for none. A
  /// candidate whose fastest sample is `slower_margin` over it after `min_samples_slower` samples
  /// stops there: that it does not beat the bound is all the loop reads of it, and a slow
  /// candidate's samples are the longest ones (a naive GEMM's are a second each).
  double slower_than_ms = 0;
  double slower_margin = 0.25;
  int min_samples_slower = 2;
};

/// Reads a policy from a request's "timing" object (missing fields keep their defaults).
timing_policy policy_from_json(const nlohmann::json& j);

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
/// timing batches of calls, harness/judge.cpp): no warm-up, `sample` is called until the policy stops.
timing_stats measure_samples(device_context& dev, const std::function<timed_sample()>& sample, const timing_policy& policy);

}  // namespace kblaster::harness
