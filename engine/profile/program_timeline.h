// The program's GPU timeline as libkblaster_timeline.so (capture/timeline/) writes it: one JSON
// object per line, each a kernel, a memcpy or a memset the GPU ran, with its start and end in
// nanoseconds. Reading it, and running a program under the collector to get one.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

enum class activity_kind { kernel, memcpy, memset };

/// One span of GPU work.
struct timeline_activity {
  activity_kind kind = activity_kind::kernel;
  std::string mangled;   // kernels: the entry's symbol (what ncu's --kernel-name-base mangled matches)
  std::string name;      // kernels: demangled ("void relu_rowsum<float>(float const*, float*, int)")
  std::string function;  // kernels: the short name ("relu_rowsum"), as profiles name kernels
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0;
  std::uint32_t correlation = 0;  // CUPTI's: increases in the order the host made the calls
  std::array<int, 3> grid{}, block{};
  std::uint64_t bytes = 0;  // memcpy, memset
  std::string copy;         // memcpy: "HtoD", "DtoH", "DtoD", …

  std::uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

/// A whole timeline file.
struct program_timeline {
  std::vector<timeline_activity> activities;  // as written (by stream and buffer, not by time)
  std::uint64_t dropped = 0;  // records CUPTI could not deliver (its buffers full)
  bool complete = false;      // the collector wrote its last line: the program exited through exit()
};

class timeline_parse_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads the collector's JSON lines. Throws timeline_parse_error naming the line when one is not
/// JSON or a span lacks its times; lines of kinds it does not know are skipped (a newer collector).
program_timeline parse_timeline(const std::string& jsonl);

/// What the timeline leaves uncertain, in words for the user ("the program did not exit through
/// exit(): kernels still running then are missing"); empty when nothing.
std::vector<std::string> timeline_warnings(const program_timeline& timeline);

/// libkblaster_timeline.so: $KBLASTER_TIMELINE_COLLECTOR, else beside kblaster (a build tree's
/// cli/); empty when neither exists (kblaster was built without CUPTI).
std::string find_timeline_collector();

/// How to run the program under the collector.
struct timeline_run_options {
  std::string collector;  // empty: find_timeline_collector()
  std::string output;     // the JSON lines file (its folder must exist)
  std::string cwd;
  std::vector<std::string> env;  // NAME=VALUE added to the environment
  std::chrono::seconds timeout{600};
  std::stop_token stop;
};

/// What one run under the collector gave.
struct timeline_run {
  bool ok = false;
  std::string error;  // why there is no timeline: no collector, the program failed, CUPTI wrote nothing
  program_timeline timeline;
  std::string program_output;  // its stdout and stderr (the tail)
  double seconds = 0;
};

/// Runs `program` (argv) once with the collector injected (CUDA_INJECTION64_PATH) and reads its
/// timeline. Never throws for the program's failures: `error` says what went wrong.
timeline_run run_under_timeline(const std::vector<std::string>& program, const timeline_run_options& options);

}  // namespace kblaster::engine
