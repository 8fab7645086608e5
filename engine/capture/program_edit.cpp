// Applying a rewrite to the program, and comparing two captures' outputs.
#include "engine/capture/program_edit.h"
#include "engine/capture/capture_variation.h"
#include "engine/source/kernel_launches.h"
#include "engine/task/task.h"
#include "support/files.h"

#include <cmath>
#include <cstring>

namespace kblaster::engine {

program_edit edit_program(const std::string& program, const std::string& generated, const std::string& rewritten,
                          const std::string& kernel_name) {
  const auto generated_end = launcher_start(generated);
  const auto rewritten_end = launcher_start(rewritten);
  if (generated_end == std::string::npos) throw capture_error("the task's kernel.cu has no launcher marker: it was not written by kblaster capture");
  if (rewritten_end == std::string::npos)
    throw capture_error("the rewrite dropped the line \"" + std::string(launcher_marker) +
                        "…\", which separates the program's code from the launcher: it cannot be carried back");
  // The generated file is the program up to the kernel's closing brace, then blank lines, then
  // the launcher: the program's part is what precedes the blank lines.
  std::string program_part = generated.substr(0, generated_end);
  while (!program_part.empty() && program_part.back() == '\n') program_part.pop_back();
  if (program.compare(0, program_part.size(), program_part) != 0)
    throw capture_error("the program changed since it was captured (its code up to the kernel differs): capture it again");
  program_edit e;
  std::string rewritten_part = rewritten.substr(0, rewritten_end);
  while (!rewritten_part.empty() && rewritten_part.back() == '\n') rewritten_part.pop_back();
  e.edited = rewritten_part + program.substr(program_part.size());
  e.rewritten_end = rewritten_part.size();
  e.captured_launch = launch_configuration(generated.substr(generated_end));
  e.rewritten_launch = launch_configuration(rewritten.substr(rewritten_end));
  e.launch_changed = e.captured_launch != e.rewritten_launch;
  e.call_sites = launch_configurations(program, kernel_name);
  return e;
}

std::optional<allocation_mismatch> compare_capture_outputs(const kernel_capture& expected, const kernel_capture& actual,
                                                           const std::vector<allocation_view>& views) {
  if (expected.allocations.size() != actual.allocations.size() || views.size() != expected.allocations.size())
    throw capture_error("the two captures point into different numbers of allocations (" +
                        std::to_string(expected.allocations.size()) + " and " + std::to_string(actual.allocations.size()) + ")");
  for (std::size_t a = 0; a < expected.allocations.size(); ++a) {
    const auto& want = expected.allocations[a];
    const auto& got = actual.allocations[a];
    if (want.bytes != got.bytes)
      throw capture_error("allocation " + std::to_string(a) + " has " + std::to_string(got.bytes) + " bytes, the original's " +
                          std::to_string(want.bytes));
    const auto w = support::read_file(want.written ? want.after : want.before);
    const auto g = support::read_file(got.written ? got.after : got.before);
    const auto& dtype = views[a].dtype;
    const auto size = dtype_bytes(dtype);
    const bool floating = is_floating_dtype(dtype);
    // Where the original itself varies run to run, the task's widened tolerance (capture_task).
    const auto tol = want.varies ? varying_tolerance(dtype, variation_of(want, dtype)) : tolerance_for(dtype, task_spec{});
    allocation_mismatch m;
    m.allocation = a;
    m.name = views[a].name;
    for (std::uint64_t i = 0; i < want.bytes / size; ++i) {
      bool same;
      if (floating) {
        const double x = element_value(g, dtype, i), y = element_value(w, dtype, i);
        same = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol.atol + tol.rtol * std::fabs(y);
      } else {
        same = std::memcmp(g.data() + i * size, w.data() + i * size, size) == 0;
      }
      if (same) continue;
      if (m.count++ == 0) {
        m.element = i;
        m.got = element_text(g, dtype, i);
        m.expected = element_text(w, dtype, i);
      }
    }
    if (m.count) return m;
  }
  return std::nullopt;
}

std::string describe(const allocation_mismatch& m) {
  return m.name + ": " + std::to_string(m.count) + " element(s) differ; first at [" + std::to_string(m.element) + "] (got " +
         m.got + ", expected " + m.expected + ")";
}

}  // namespace kblaster::engine
