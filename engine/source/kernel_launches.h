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

}  // namespace kblaster::engine
