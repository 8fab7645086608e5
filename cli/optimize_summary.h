// What `kblaster optimize` prints when a run ends: the speedup, where the results are, and for a
// program what became of the rewrite in it.
#pragma once

#include "engine/optimize/service.h"

#include <iosfwd>

namespace kblaster::cli {

/// The summary on `out`; returns the exit status: 0, 1 (the run failed, or the rewrite does not
/// reproduce the program's outputs), 75 (EX_TEMPFAIL: a deferred model's answers are awaited).
int print_optimize_summary(const engine::optimize::optimize_outcome& o, std::ostream& out);

}  // namespace kblaster::cli
