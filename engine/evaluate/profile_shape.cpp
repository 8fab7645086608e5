// Halving a slow task's shared leading dimension for the profile (see profile_shape.h).
#include "engine/evaluate/profile_shape.h"

#include <algorithm>
#include <numeric>

namespace kblaster::engine::optimize {

namespace {

std::int64_t elements(const input_spec& t) {
  return std::accumulate(t.shape.begin(), t.shape.end(), std::int64_t{1}, std::multiplies<>());
}

}  // namespace

std::optional<profile_shape> reduced_profile_shape(const task_spec& task, std::optional<double> runtime_ms,
                                                   const profile_shape_limits& limits) {
  if (task.inputs.empty()) return std::nullopt;
  const std::int64_t batch = task.inputs.front().shape.empty() ? 0 : task.inputs.front().shape.front();
  if (batch < 2) return std::nullopt;
  // Every tensor must be batched by the same leading dimension, or the smaller shape would not
  // be the same problem (a matmul's B would lose rows of K). Outputs the task declares count too;
  // undeclared ones are the reference's to shape.
  auto batched = [&](const input_spec& t) { return !t.shape.empty() && t.shape.front() == batch && t.file.empty(); };
  if (!std::all_of(task.inputs.begin(), task.inputs.end(), batched) ||
      !std::all_of(task.outputs.begin(), task.outputs.end(), batched))
    return std::nullopt;
  if (!runtime_ms || *runtime_ms <= limits.pass_ms) return std::nullopt;
  std::int64_t work = 0;
  for (const auto& t : task.outputs.empty() ? task.inputs : task.outputs) work = std::max(work, elements(t));

  std::int64_t divisor = 1;
  while (*runtime_ms / static_cast<double>(divisor) > limits.pass_ms && batch / (divisor * 2) >= 1 &&
         work / (divisor * 2) >= limits.min_elements)
    divisor *= 2;
  if (divisor == 1) return std::nullopt;

  profile_shape p;
  p.full_batch = batch;
  p.batch = batch / divisor;
  p.task = task;
  for (auto* set : {&p.task.inputs, &p.task.outputs})
    for (auto& t : *set) t.shape.front() = p.batch;
  p.note = "profiled at a leading dimension of " + std::to_string(p.batch) + " of the task's " + std::to_string(batch) +
           " (1/" + std::to_string(divisor) + ") to keep ncu's replay short; the verdict and timing are of the full shape";
  return p;
}

}  // namespace kblaster::engine::optimize
