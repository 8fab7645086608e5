// How a kernel's performance is described to the user: the hover's performance section and
// the code lens's one-line summary. Shared so that both say the same thing.
#pragma once

#include "engine/analysis/file_analysis.h"
#include "engine/analysis/kernel_insight.h"

#include <string>
#include <vector>

namespace kblaster::server {

/// Markdown: state and evidence, the KB's top strategies, the last runtime and when. Short.
/// Without a profile it states only what is known (resources, occupancy and its limiter, spills,
/// `launches` as the source writes them) and claims no performance state.
std::string performance_markdown(const engine::file_analysis& a, const engine::kernel_view& v,
                                 const engine::kernel_insight& insight, const std::vector<std::string>& launches = {});

/// A state key in words: "memory_bound_dram+uncoalesced_global_access" -> "memory bound dram,
/// uncoalesced global access".
std::string state_in_words(const std::string& key);
/// An ISO 8601 UTC timestamp as "2026-11-23 21:14 UTC".
std::string utc_in_words(const std::string& iso);

/// One line for a code lens: "memory bound dram · 1.23 ms"; without a profile, "not profiled
/// (`why_not`) · occupancy ...".
std::string performance_line(const engine::kernel_view& v, const engine::kernel_insight& insight,
                             const std::string& why_not = "");

/// Why `a` has no live profile, in the few words a lens has room for ("no GPU", "no ncu", "not
/// trusted"); empty when it has one or the reason is not the machine's or the user's to change.
std::string live_skip_words(const engine::file_analysis& a);

/// The last runtime: the KB's when it has one, else the live profile's kernel duration.
std::optional<engine::measured_runtime> last_runtime(const engine::file_analysis& a, const engine::kernel_view& v,
                                                     const engine::kernel_insight& insight);

/// "1.23 ms", "45.6 µs".
std::string format_ms(double ms);

}  // namespace kblaster::server
