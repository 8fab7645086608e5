// The reference probed for degenerate tasks (request "probe_reference"): a task whose output is
// the same for every input of its declared distribution, or does not depend on one of its inputs,
// verifies nothing there. A kernel that writes the constant when its inputs look like the declared
// distribution, and computes otherwise, passes every seed and every stress set; its speedup is
// meaningless. Public benchmarks hold such problems (a ReLU, then -50, then a clamp to [0, 1]:
// always 0 for randn inputs).
//
// The probe draws a few seeds' inputs and runs the reference on each (no candidate, no runner):
//   - an output is constant when every draw's output passes, under the output's tolerance and the
//     verdict's own comparison (compare_output), as the first draw's: a kernel writing the first
//     draw's output would pass every seed;
//   - an input is ignored when a fresh draw of that input alone, the others kept, leaves every
//     output passing as the first draw's. Inputs that are not drawn at random (a file, zeros,
//     ones, arange) are not redrawn, and none is when every output is constant already.
// Its cost: `probe_draws` reference calls, then one per input redrawn.
#pragma once

#include "engine/task/task.h"
#include "harness/device.h"
#include "harness/reference.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace kblaster::harness {

/// Draws of the task's inputs the probe runs the reference on.
constexpr int probe_draws = 3;

/// The probe's reply: {"draws": N, "outputs": [{"label", "constant", "spread", "value"?}],
/// "inputs": [{"label", "checked", "ignored"?, "change"?, "why"?}]} (engine/evaluate/reference_probe.h
/// reads it). Seeds are seed_base, seed_base + 1, ...
nlohmann::json probe_reference(const engine::task_spec& task, reference_model& ref, device_context& dev,
                               std::uint64_t seed_base);

}  // namespace kblaster::harness
