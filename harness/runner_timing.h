// Timing the library a runner loaded: batches of calls on fresh inputs (timed_batch.h), the
// runner's CUDA events per call as the samples, and the judge's own figure from its host clock
// around each batch, which confirms them (judge_time.cpp). The policy, its numbers and their
// reasons are in engine/task/timing_policy.h.
#pragma once

#include "harness/device.h"
#include "harness/runner/protocol.h"
#include "harness/runner_process.h"
#include "harness/timed_batch.h"
#include "harness/timing.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>

namespace kblaster::harness {

/// What timing the library loaded in a runner gave, per call.
struct runner_timing {
  timing_stats stats;        // samples: per call, the runner's events over a batch (host: the judge's clock)
  int calls = 1;             // calls per (full) batch
  double judge_ms = 0;       // the judge's own figure per call (its host clock)
  double exchange_ms = 0;    // an empty exchange's host time over its events (one per batch)
  bool exchange_measured = false;  // exchange_ms taken (not where full less half batches cancel it)
  double empty_cpu_ms = 0;   // the runner's CPU time in an empty exchange
  double cpu_per_call_ms = 0;
  double runner_mean_ms = 0;  // the runner's event time over every timed call, per call
  int second_look_batches = 0;  // batches more, taken when the judge's figure was over half its margin
  int threads_before = -1;
  runner::reply last;        // the last batch's reply
};

/// Thrown out of a timing when the runner's call (or a check after a batch) failed; carries the
/// reply to give.
struct sample_failed {
  nlohmann::json reply;
};

/// Maps `batch` into `runner` and times the library it loaded there in batches of `calls` (0: as
/// many as timing_rules::batch_target_ms asks, from the warm-up); `check(slot)` runs after each
/// batch on a slot chosen then (none when empty). Throws sample_failed.
runner_timing time_in_runner(device_context& dev, runner_process& runner, timed_batch& batch, std::uint64_t seed,
                             const timing_policy& policy, int calls, const std::function<void(int)>& check,
                             runner_process::deadline until);

}  // namespace kblaster::harness
