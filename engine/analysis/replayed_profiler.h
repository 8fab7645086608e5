// A recorded Nsight Compute report standing in for the live profile on a machine that cannot
// make one (demos and tests without a GPU): what the editor's `profile.replay` setting asks for.
#pragma once

#include "engine/analysis/file_analysis.h"

#include <string>

namespace kblaster::engine {

/// A live profiler that serves the recorded details page `details_csv` for every file, with the
/// program's recorded timeline `timeline` (the collector's JSON lines) when one is given. Each
/// outcome says it was replayed: `replayed_from` is the recording, and a warning "replayed from
/// PATH" tells whoever shows the warnings.
live_profiler replayed_profiler(std::string details_csv, std::string timeline = "");

}  // namespace kblaster::engine
