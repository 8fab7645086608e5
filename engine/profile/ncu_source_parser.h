// Parser for Nsight Compute's source page (`--page source --print-source sass|cuda|cuda,sass`):
// per-instruction and, for a -lineinfo build exported as "cuda,sass", per-CUDA-line metrics.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// Metrics that source attribution uses, for one SASS instruction or one CUDA line.
struct source_metrics {
  double stall_samples = 0;             // "Warp Stall Sampling (All Samples)"
  double instructions_executed = 0;     // "Instructions Executed"
  double global_excessive_sectors = 0;  // "L2 Theoretical Sectors Global Excessive"
  double global_sectors = 0;            // "L2 Theoretical Sectors Global"
  double shared_excessive_wavefronts = 0;  // "L1 Wavefronts Shared Excessive"
  double shared_wavefronts = 0;            // "L1 Wavefronts Shared"
  double divergent_branches = 0;           // "Divergent Branches"
  std::map<std::string, double> stalls;    // "stall_lg" → samples (issued and not issued)
};

/// One SASS instruction row.
struct sass_instruction {
  std::string address;  // as printed, e.g. "0x7ff2757ac200"
  std::string text;     // "LDG.E R4, desc[UR4][R2.64]"
  source_metrics metrics;
  int line = 0;         // the CUDA line it belongs to (cuda,sass view), 0 when unknown
};

/// One CUDA source line with metrics aggregated by ncu.
struct source_line {
  int line = 0;
  std::string text;
  source_metrics metrics;
};

/// The source page of one kernel (one function in one file).
struct source_page {
  std::string kernel;  // "Kernel Name" / "Function Name" header value
  std::string file;    // "File Path" / "File Name" header value; empty for the sass view
  std::vector<source_line> lines;             // cuda and cuda,sass views
  std::vector<sass_instruction> instructions;  // sass and cuda,sass views
  bool has_metrics = false;  // false for the cuda view, which holds only the source text
};

/// Parses every kernel's block in a source-page CSV. Throws ncu_parse_error (ncu_csv_parser.h)
/// when no block is recognised.
std::vector<source_page> parse_ncu_source(std::string_view csv_text);

}  // namespace kblaster::engine
