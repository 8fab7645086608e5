// libFuzzer target: the task format's reader (engine/task/task.h). Tasks come from KernelBench
// imports and from users' folders; the harness reads the same JSON on the GPU machine. A task
// that reads must survive its own round trip through to_json.
#include "engine/task/task.h"
#include "fuzz_input.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace engine = kblaster::engine;
  const auto j = kblaster::fuzz::as_json(kblaster::fuzz::as_text(data, size));
  if (!j) return 0;
  engine::task_spec task;
  try {
    task = engine::task_from_json(*j, "/nonexistent/task", "fuzz");
  } catch (const engine::task_error&) {
    return 0;
  }
  for (std::size_t i = 0; i < task.outputs.size(); ++i) {
    const auto tol = engine::tolerance_for(task.outputs[i].dtype, task, i);
    if (task.outputs[i].atol && tol.atol != *task.outputs[i].atol) std::abort();  // an output's own wins
  }
  try {
    const auto again = engine::task_from_json(engine::to_json(task), "/nonexistent/task", "fuzz");
    if (again.name != task.name || again.inputs.size() != task.inputs.size() || again.outputs.size() != task.outputs.size())
      std::abort();
    for (std::size_t i = 0; i < task.outputs.size(); ++i)
      if (again.outputs[i].atol != task.outputs[i].atol || again.outputs[i].rtol != task.outputs[i].rtol) std::abort();
  } catch (const engine::task_error&) {
    std::abort();  // what was read is written back readable
  }
  return 0;
}
