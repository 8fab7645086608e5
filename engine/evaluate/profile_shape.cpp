// Halving a task's shared leading dimension for the profile (see profile_shape.h).
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
  double bytes = 0;
  std::int64_t largest = 0;
  for (const auto* set : {&task.inputs, &task.outputs})
    for (const auto& t : *set) {
      bytes += static_cast<double>(elements(t)) * static_cast<double>(dtype_bytes(t.dtype));
      largest = std::max(largest, elements(t));
    }
  // Undeclared outputs: as large again as the inputs, the usual element-wise or GEMM case.
  if (task.outputs.empty()) bytes *= 2;

  std::int64_t divisor = 1;
  auto slow = [&](std::int64_t d) { return runtime_ms && *runtime_ms / static_cast<double>(d) > limits.pass_ms; };
  auto large = [&](std::int64_t d) { return bytes / static_cast<double>(d) > limits.max_bytes; };
  for (;;) {
    const std::int64_t next = divisor * 2;
    if (batch / next < 1 || largest / next < limits.min_elements) break;
    if (!slow(divisor) && !(large(divisor) && bytes / static_cast<double>(next) >= limits.min_bytes)) break;
    divisor = next;
  }
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
