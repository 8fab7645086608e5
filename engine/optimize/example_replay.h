// The example a machine without a GPU can run: a session recorded on a GPU (its GPU results and
// the model's answers) replayed on a copy of the shipped task, with the very options it was
// recorded with, so that the replay follows the recorded path (examples/example_replay.json).
// What scripts/demo replays, and what the editors' "Replay the Example" runs in one click.
#pragma once

#include "engine/optimize/service.h"

#include <filesystem>
#include <optional>
#include <string>

namespace kblaster::engine::optimize {

/// The example's manifest, its paths made absolute.
struct example_replay {
  std::string name;                     ///< "row_softmax"
  std::filesystem::path task_dir;       ///< the shipped task (never written: a run takes a copy)
  std::filesystem::path gpu_results;    ///< the recorded GPU results
  std::filesystem::path answers;        ///< the model's recorded answers
  std::string recorded_on;              ///< the GPU the results were measured on
  int breadth = 2, depth = 2, iterations = 2, top_k = 3;
  std::uint64_t seed = 1;
  std::string policy = "ucb";
};

/// The manifest beside this kblaster: `$KBLASTER_EXAMPLES/example_replay.json`, else the source
/// tree's examples/ (a build tree names it in CMakeCache.txt), else PREFIX/share/kblaster/examples/;
/// nullopt when none is found or its files are missing.
std::optional<example_replay> find_example_replay();

/// Reads the manifest at `file`; throws std::runtime_error naming what is wrong.
example_replay read_example_replay(const std::filesystem::path& file);

/// The request that replays `example` in `scratch` (emptied first): a copy of its task, a fresh
/// KB, its recordings and options; `pace` > 0 waits that fraction of each recorded GPU time.
optimize_request example_request(const example_replay& example, const std::filesystem::path& scratch, double pace);

}  // namespace kblaster::engine::optimize
