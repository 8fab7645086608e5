// The launcher contract of a captured kernel: kb_forward, generated from the captured launch,
// replays it on memory the harness restores; the model may rewrite it (grid, block, shared
// memory) together with the kernel. Also the layout of that memory as task inputs and outputs.
#pragma once

#include "engine/capture/kernel_capture.h"
#include "engine/source/kernel_locator.h"

#include <string>
#include <vector>

namespace kblaster::engine {

/// The line that starts the generated launcher; what precedes it is the program's code.
inline constexpr const char* launcher_marker = "// ---- KernelBlaster launcher";

/// Where the launcher starts in a candidate of a capture's task: the start of the marker's line,
/// or npos when the candidate has none.
std::size_t launcher_start(const std::string& candidate);

/// The configuration between <<< and >>> of a launcher's (last) launch: "dim3(4, 3, 1), dim3(16,
/// 16, 1), 0, kb_stream"; empty when it has none.
std::string launch_configuration(const std::string& launcher);

/// How one allocation appears to the task: always an input (its contents before the launch);
/// also an output when the launch wrote it (compared against the reference afterwards).
struct allocation_view {
  std::string name;   // e.g. "out (parameter 1)": the first parameter pointing into it
  std::string dtype;  // from the pointee type of the parameters pointing into it; uint8 if unsure
  std::int64_t elements = 0;
  int output = -1;    // index among the outputs, or -1 when the launch leaves it unchanged
};

/// The views of every allocation of `capture`, in allocation order.
std::vector<allocation_view> allocation_views(const kernel_capture& capture, const cuda_symbol& kernel);

/// The kb_forward source that replays `capture` of `kernel` (a definition located in the
/// program's source). Throws capture_error when a parameter cannot be expressed.
std::string generate_launcher(const kernel_capture& capture, const cuda_symbol& kernel, const std::string& provenance);

/// The parameter types of the captured kernel, from its demangled name ("float const*"):
/// concrete even for a template.
std::vector<std::string> captured_parameter_types(const kernel_capture& capture);

}  // namespace kblaster::engine
