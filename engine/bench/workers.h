// Running a bench as several processes on one host, one per GPU: each is this same command with
// --shard I/N, a worker name and CUDA_VISIBLE_DEVICES=I; they share the run directory (atomic
// result files) and the KB (SQLite in WAL mode, safe across processes). Also the facts the run
// manifest records about where it ran.
#pragma once

#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// Parses "I/N" (0 <= I < N); returns an error message, empty on success.
std::string parse_shard(const std::string& text, int& index, int& count);

/// This process's arguments (from /proc/self/cmdline), argv[0] included.
std::vector<std::string> own_arguments();

/// `args` without the option `name` (and its value, as "--name V" or "--name=V").
std::vector<std::string> without_option(const std::vector<std::string>& args, const std::string& name);

/// Runs `gpus` copies of this executable with `args` (argv[0] excluded) plus "--shard I/N
/// --worker gpuI --no-report" and CUDA_VISIBLE_DEVICES=I; waits for all. Returns the number that
/// failed to start or exited non-zero.
int run_workers(const std::vector<std::string>& args, int gpus);

/// "NVIDIA H100 80GB HBM3 x 1" from nvidia-smi, or "none found".
std::string gpu_description();

/// `git describe --always --dirty` of the source tree the binary was built from, or "unknown".
std::string git_version();

}  // namespace kblaster::engine::bench
