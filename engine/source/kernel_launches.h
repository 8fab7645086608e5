// Launch sites of a kernel in a source: `name<<<grid, block[, shared[, stream]]>>>(...)`, as
// written. What the editor can say about a launch without running anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// The launch configurations of kernel `name` in `source`, as written between `<<<` and `>>>`
/// (whitespace runs as one space), in source order, without repeats; `name<T><<<...>>>` counts.
/// Comments are not skipped: a launch in a comment is listed too.
std::vector<std::string> launch_configurations(std::string_view source, std::string_view name);

/// The __global__ kernels defined in `source` that the body of function `caller` (a definition
/// in `source`, e.g. "kb_forward") launches, by short name, in source order; empty when there is
/// no such function or it launches none of them directly.
std::vector<std::string> kernels_launched_by(std::string_view source, std::string_view caller);

}  // namespace kblaster::engine
