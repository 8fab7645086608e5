// What a rewrite does to the whole program, measured as the user sees it: the original and the
// optimized program run alternately, whole runs timed from outside, and the speedup is the
// median of the per-pair ratios with a distribution-free 95 % interval. Kernel timings in the
// harness say what a kernel gains; only this says what the program gains (a 2.5x kernel can be
// +1 % of a program).
//
// The steps, in order: warm both programs up (first runs load the driver and JIT), then run
// pairs in ABBA order (a drift in clocks or temperature falls on both sides alike) until the
// pairs are enough and the budget is spent, then summarise the ratios.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// One way to run a program: its command line, folder and added environment ("NAME=VALUE").
struct program_command {
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::string> env;
};

struct end_to_end_options {
  int warmup_runs = 1;     ///< per side, not counted
  int min_pairs = 10;      ///< the interval needs at least this many
  int max_pairs = 60;
  /// Pairs keep coming after min_pairs until this much wall time has gone.
  std::chrono::duration<double> budget{30.0};
  std::chrono::seconds run_timeout{300};
};

/// The median of the ratios and its 95 % interval (order statistics: no assumption about the
/// distribution of run times).
struct ratio_summary {
  double median = 1, low = 1, high = 1;
  int pairs = 0;
  /// The interval's true coverage for this many pairs (>= 0.95; exactly 0.95 is rarely possible).
  double coverage = 0;
};

/// Summarises per-pair ratios; fewer than 6 pairs give no 95 % interval (low = min, high = max,
/// coverage below 0.95 and said).
ratio_summary summarize_ratios(std::vector<double> ratios);

struct end_to_end_result {
  std::vector<double> original_seconds, optimized_seconds;  ///< every timed run, in order
  std::vector<double> ratios;                               ///< original / optimized, per pair
  ratio_summary speedup;
  bool cancelled = false;
  std::string error;  ///< a run failed (which, how, its output's tail); nothing is concluded then

  bool ok() const { return error.empty() && !cancelled && speedup.pairs > 0; }
  /// Faster with 95 % confidence: the whole interval above 1.
  bool faster() const { return ok() && speedup.low > 1.0; }
  /// "1.18x (95% CI 1.15-1.21, 12 pairs)".
  std::string text() const;
};

/// Runs the two programs alternately and measures. `progress` hears one line per pair. A stop
/// request kills the running program and returns what was measured, marked cancelled.
end_to_end_result measure_end_to_end(const program_command& original, const program_command& optimized,
                                     const end_to_end_options& options,
                                     const std::function<void(const std::string&)>& progress, std::stop_token stop);

}  // namespace kblaster::engine
