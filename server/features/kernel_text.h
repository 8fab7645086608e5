// How a kernel's performance is described to the user: the hover's performance section and
// the code lens's one-line summary. Shared so that both say the same thing.
#pragma once

#include "engine/file_analysis.h"
#include "engine/kernel_insight.h"

#include <string>

namespace kblaster::server {

/// Markdown: state and evidence, the KB's top strategies, the last runtime and when. Short.
std::string performance_markdown(const engine::file_analysis& a, const engine::kernel_view& v,
                                 const engine::kernel_insight& insight);

/// One line for a code lens: "memory_bound_dram · 1.23 ms (kb attempt)".
std::string performance_line(const engine::kernel_view& v, const engine::kernel_insight& insight);

/// The last runtime: the KB's when it has one, else the live profile's kernel duration.
std::optional<engine::measured_runtime> last_runtime(const engine::file_analysis& a, const engine::kernel_view& v,
                                                     const engine::kernel_insight& insight);

/// "1.23 ms", "45.6 us".
std::string format_ms(double ms);

}  // namespace kblaster::server
