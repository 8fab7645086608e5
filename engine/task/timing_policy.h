// The timing policy, in one place: how kblaster-harness times a candidate and its reference, and
// when it stops. A request's "timing" object sets the part a caller may choose (timing_policy);
// the rest is the judge's own and fixed (timing_rules). The engine reads it for what it asks
// (engine/evaluate/harness_evaluator.cpp) and how long it waits for the answer
// (timing_budget_seconds, engine/evaluate/harness_client.cpp); the harness applies it:
// harness/timing.cpp the warm-up and the stopping rule, harness/runner_timing.cpp the batches and
// the judge's own figure, harness/judge_time.cpp the checks after timing and the reference's figure,
// harness/timed_batch.cpp the memory a batch may take. Beside the task format because the harness
// and the engine share this library alone.
//
// Cold timing in the manner of nvbench: before every sample the L2 is flushed and persisting lines
// reset (GPU; the CPU has no flush) and the device is idle; a sample is the CUDA-event time on the
// legacy default stream, which waits for the work of every blocking stream (host time on the
// CPU); the host time of each sample, device synchronisation included, is reported beside it so
// that work hidden on non-blocking streams shows. Warm-up first, then samples until the median is
// known well enough (its relative standard error, estimated from the interquartile range, under
// the target: a few dozen samples for a kernel whose samples scatter by a few percent), or the
// samples themselves scatter less than the RSD target, or a cap is reached; median and
// interquartile range. No sample is dropped as an outlier: the median and the IQR are robust to
// the context switch or clock change that makes one.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>

namespace kblaster::engine {

/// The stopping policy of one measurement, as a request may set it.
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
  double slower_margin = 0.25;  // not on the wire
  int min_samples_slower = 2;   // not on the wire
  /// The reference's median the caller already holds (the loop: the one timed with its input),
  /// 0 for none: the reference is not timed again, and the speedup is judged against this figure.
  double reference_ms = 0;
};

/// Reads a request's "timing" object (missing fields keep their defaults, out-of-range ones are
/// clamped; anything but an object is the defaults). Throws nlohmann::json's type_error for a
/// field of the wrong type.
timing_policy timing_policy_from_json(const nlohmann::json& timing);

/// The judge's fixed rules around the samples: how a timed call is batched, how the judge
/// confirms the runner's figure, and when a reference's figure is reused.
namespace timing_rules {

/// The time a batch of calls should take: long enough that the judge's exchange with the runner
/// (a context switch of the time-sliced GPU, ~0.3 ms on an H200, scattering by tens of
/// microseconds) is a few percent of it at most once divided among its calls. A call this long
/// or longer is timed alone.
inline constexpr double batch_target_ms = 4.0;
/// The least samples where full and half batches alternate (about ten of each kind).
inline constexpr int min_samples_with_half_batches = 20;
/// Empty exchanges timed to learn an exchange's own cost, where no half batch cancels it.
inline constexpr int empty_exchanges = 15;
/// Slots of the last batch checked against the reference after sampling, beside the one checked
/// after every batch (chosen after it ran, so the candidate cannot know which).
inline constexpr int final_checked_slots = 16;
/// How far below the judge's own figure a runner's may be before the judge's stands instead (GPU).
inline constexpr double judge_margin = 1.10;
/// A judge's figure over half that margin is looked at again over up to this many more batches
/// (a fifth of a second at most): about twenty of each kind more.
inline constexpr int second_look_batches = 40;
inline constexpr std::chrono::milliseconds second_look_time{200};
/// On the CPU the runner's clock stands while it is at least this share of its CPU time per call,
/// less a slack for the clock's resolution.
inline constexpr double cpu_confirm_ratio = 0.9;
inline constexpr double cpu_confirm_slack_ms = 0.005;
/// A reference's timing serves the next candidates of its task and batch size this long (then
/// the GPU's clocks may have moved), when it converged or ran to the cap and did not throttle.
inline constexpr std::chrono::minutes reference_reuse{10};
/// Samples whose last third's median is this much over the first third's count as throttled.
inline constexpr double throttle_drift = 0.05;
/// The median's standard error is checked every this many samples (it sorts them).
inline constexpr int median_se_every = 10;
/// The time cap stops sampling only once there are this many samples.
inline constexpr int min_samples_at_cap = 3;
/// The memory a timed batch may take: this share of the GPU's free memory, at most the cap; on
/// the CPU a fixed amount.
inline constexpr std::size_t gpu_memory_divisor = 4;
inline constexpr std::size_t gpu_memory_cap_bytes = std::size_t{12} << 30;
inline constexpr std::size_t cpu_memory_bytes = std::size_t{256} << 20;

}  // namespace timing_rules

/// The seconds a time or evaluate request may take beyond the harness's own work, for a timing
/// cap of `max_seconds`: the cap twice (candidate and reference) plus the warm-ups.
inline double timing_budget_seconds(double max_seconds) { return 3 * max_seconds; }

}  // namespace kblaster::engine
