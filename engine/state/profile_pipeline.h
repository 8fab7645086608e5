// The three ways the engine sees a kernel, end to end: a recorded Nsight Compute report, a
// live profile on a GPU (nvcc build + ncu), and a static profile (nvcc + ptxas + occupancy).
// Each returns the classified kernel instances ready to render.
#pragma once

#include "engine/profile/ncu_runner.h"
#include "engine/toolchain/nvcc_diagnostics.h"
#include "engine/toolchain/nvcc_driver.h"
#include "engine/profile/profile_report.h"
#include "engine/profile/program_profile.h"
#include "engine/state/profile_summary.h"
#include "engine/state/state_naming.h"

#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// Classified kernels plus whatever the run produced beside them.
struct profile_outcome {
  std::vector<kernel_view> kernels;   // launch order
  std::vector<std::string> warnings;
  std::vector<diagnostic> diagnostics;  // compiler diagnostics (static and live modes)
  std::string report_path;              // the kept .ncu-rep (live mode)
  std::string error;                    // non-empty when nothing could be analysed
  /// By kernel (short name): where its profile came from when not from one run of the whole
  /// file, e.g. "launch 0 of row_normalize.cu 64 256, captured and replayed alone under ncu".
  std::map<std::string, std::string> origins;
  /// By kernel (short name): why the live profile has no view of it ("its launch could not be
  /// captured (…)"), for the hover to say instead of a bare "not measured".
  std::map<std::string, std::string> not_profiled;
  /// The program's timeline (program_profile_pipeline.h): every kernel's share of the GPU time
  /// over all its launches, the GPU's busy and idle time. Absent without one, and then
  /// `program_unavailable` says why when a program was run.
  std::optional<program_profile> program;
  std::string program_unavailable;
  /// The recording this outcome was replayed from when it stands in for a live profile that no
  /// GPU here made (engine/analysis/replayed_profiler); absent for a profile made here.
  std::optional<std::string> replayed_from;
};

/// Classifies a recorded report: the details page, optionally the raw and source pages.
/// Files that cannot be read or parsed come back as `error`, never as an exception.
profile_outcome analyze_recorded(const std::string& details_csv_path, const std::optional<std::string>& raw_csv_path = {},
                                 const std::optional<std::string>& source_csv_path = {},
                                 const state_namer* matcher = nullptr);

/// Classifies parsed pages held in memory (what analyze_recorded and profile_live share).
profile_outcome analyze_pages(const std::string& details_csv, const std::string& raw_csv, const std::string& source_csv,
                              const state_namer* matcher = nullptr);

/// Options of the static and live modes.
struct build_profile_options {
  std::string arch;          // empty: local GPU's, else sm_90
  int assumed_block_size = 256;  // static mode: the block size occupancy is computed for
  std::vector<std::string> nvcc_flags;
  ncu_options ncu;           // live mode; report_base defaults to "<file stem>" in the cwd
  std::vector<std::string> program_args;  // live mode: arguments of the built program
  std::stop_token stop;      // kills nvcc or ncu in flight (the outcome's error says it was stopped)
  /// Live mode: run the program once under the timeline collector first, then ncu on one launch
  /// of each kernel worth it (`worth`); off, or where the collector cannot run, every launch.
  bool timeline = true;
  worth_profiling_policy worth;
};

/// Finds nvcc and builds `cu_path` for profiling; on failure records why in `out` (with the
/// compiler's diagnostics) and returns nothing. Shared by the static and live paths; `keep_ptx`
/// reads each kernel's compiled __launch_bounds__ into its resources (nvcc_options::keep_ptx).
std::optional<compile_result> compile_for_profile(const std::string& cu_path, const build_profile_options& options,
                                                  output_kind kind, profile_outcome& out, bool keep_ptx = false);

/// Static profile of `cu_path`: compile with ptxas -v (no GPU needed) and classify each kernel.
profile_outcome analyze_static(const std::string& cu_path, const build_profile_options& options,
                               const state_namer* matcher = nullptr);

/// Builds `cu_path` as an executable with -lineinfo and profiles it with ncu on this machine's GPU.
profile_outcome profile_live(const std::string& cu_path, const build_profile_options& options,
                             const state_namer* matcher = nullptr);

}  // namespace kblaster::engine
