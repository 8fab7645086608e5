// Source attribution: from a -lineinfo profile's source page, the CUDA lines that hurt most
// (stall samples, excessive global sectors, shared-memory bank-conflict wavefronts), so the
// editor can point at them.
#pragma once

#include "engine/profile/ncu_source_parser.h"

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// Why a line is listed.
enum class hot_reason { stall_samples, uncoalesced_global, shared_bank_conflicts };

/// "stall_samples", "uncoalesced_global", "shared_bank_conflicts".
const char* to_string(hot_reason r);

/// One line that hurts, with the figures that say so.
struct hot_line {
  std::string file;
  int line = 0;  // 1-based CUDA line; 0 when only SASS is known (no -lineinfo)
  std::string text;          // the source line (or SASS instruction) trimmed
  hot_reason reason = hot_reason::stall_samples;
  double share = 0;          // fraction (0..1) of the kernel's total of that figure
  double amount = 0;         // samples, sectors or wavefronts on this line
  std::string top_stall;     // "stall_lg" …; empty when unknown
  /// Where most of the line's figure really goes when that is code inlined from another file
  /// (a CUDA header's conversion, a library's device function): "cuda_fp16.hpp:708". Empty
  /// when the line's own code takes most of it.
  std::string inlined_from;
  double inlined_share = 0;  // fraction (0..1) of the line's amount spent in `inlined_from`
};

/// Up to `per_reason` lines for each reason, each carrying at least `min_share` of the
/// kernel's total for that reason; stall lines first, then the memory ones. Uses the per-line
/// rows of a cuda,sass page, or falls back to SASS instructions when the page has no lines.
std::vector<hot_line> attribute_hot_lines(const source_page& page, std::size_t per_reason = 3,
                                          double min_share = 0.05);

/// The same for one kernel whose source page has a block per file (ncu's cuda,sass view prints
/// one for every file the function's code comes from, a header's inlined code included). Lines
/// are ranked in the kernel's own file, the block holding its entry instruction, whose lines
/// count the inlined instructions at their call sites; a line whose cost is mostly inlined code
/// says from where (`inlined_from`). Samples are never placed on a header's line numbers as if
/// they were the kernel file's.
std::vector<hot_line> attribute_kernel_hot_lines(const std::vector<const source_page*>& pages_of_kernel,
                                                 std::size_t per_reason = 3, double min_share = 0.05);

/// True for a file of the CUDA toolkit or the system's headers (cuda_fp16.hpp, cub/, /usr/include):
/// never the user's code to edit.
bool is_toolkit_source(std::string_view path);

}  // namespace kblaster::engine
