// "Optimize the program": the use case behind `kblaster optimize PROGRAM.cu --program -- ARGS`
// and the editor's Optimize on a file. The steps:
//   1. profile the program (its timeline: every kernel's share of the GPU time, its headroom);
//   2. plan: rank the kernels by what they can give back, say the Amdahl bound before anything runs;
//   3. for each planned kernel in turn, on the program as the previous kernels left it: run the
//      Optimize loop (optimize_file) with its share of the budget, carry the verified rewrite into
//      the program (re-captured: the launch's outputs must reproduce), then time the program with
//      and without it end to end (end_to_end.h); keep it only if the program got faster, and move
//      on when a kernel stops paying;
//   4. measure the original against the final program once more, end to end: the figure reported.
// Cancelled, the same request resumes: each kernel's loop resumes from its checkpoint and each
// decision already measured is read back, not measured again.
#pragma once

#include "engine/optimize/service.h"
#include "engine/program/end_to_end.h"
#include "engine/program/program_plan.h"
#include "engine/state/profile_pipeline.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

struct program_optimize_request {
  /// The program (`file`, a .cu with main()), how it runs (`program.run`), the loop (whose
  /// candidates budget is split between the kernels), evaluator, model and KB, as for one kernel.
  optimize::optimize_request base;
  plan_policy plan;
  end_to_end_options end_to_end;
  build_profile_options profile;  ///< the live profile (ncu, arch)
  /// A recorded profile instead of a live one (no GPU): the collector's timeline and, for the
  /// headroom, ncu's details page.
  std::string recorded_timeline, recorded_details;
  /// Where the run's files go; empty: .kblaster/program-runs/<file stem> beside the program.
  std::filesystem::path out_dir;
  bool apply = false;  ///< write the final program over the user's file (the original kept in out_dir)
};

/// One kernel's turn.
struct kernel_turn {
  planned_kernel plan;
  int candidates_budget = 0;  ///< its share of the budget (0: the loop's own limits)
  /// kept | not faster end to end | no faster kernel found | did not reproduce in the program | failed
  std::string status;
  std::string detail;                        ///< why, in a sentence
  double harness_speedup = 1;                ///< the loop's best over its input, in the harness
  std::optional<double> in_program_speedup;  ///< the launch's time in the program, before / after
  std::optional<end_to_end_result> end_to_end;  ///< the program with this rewrite against without
  bool kept = false;
  std::filesystem::path out_dir;
};

struct program_optimize_outcome {
  program_profile profile;
  program_plan plan;
  std::vector<kernel_turn> turns;
  /// The original against the final program, measured again after the last turn (absent when no
  /// rewrite was kept: the program is the original).
  std::optional<end_to_end_result> total;
  std::string original_text, final_text, diff;
  std::filesystem::path out_dir, final_path;
  std::filesystem::path applied_to, applied_backup;
  bool cancelled = false;
  bool improved() const { return final_text != original_text; }
};

/// How each step is done; the defaults do them for real (tests replace the GPU's parts).
struct program_steps {
  std::function<profile_outcome(const program_optimize_request&)> profile;
  std::function<optimize::optimize_outcome(const optimize::optimize_request&, const optimize::service_events&,
                                           std::stop_token)>
      optimize_kernel;
  /// Builds the program in `source` for timing into `folder`: the command that runs it as the
  /// user's arguments say (in the sandbox when `model_written`).
  std::function<program_command(const std::string& source, const capture_request& how, const std::filesystem::path& folder,
                                bool model_written, std::stop_token)>
      build;
  std::function<end_to_end_result(const program_command&, const program_command&, const end_to_end_options&,
                                  const std::function<void(const std::string&)>&, std::stop_token)>
      measure;
};
program_steps default_program_steps();

/// Runs the use case. Throws optimize::optimize_refusal for what the user must fix first (not a
/// program, no profile); a kernel whose turn fails is a turn with status "failed", never an
/// exception.
program_optimize_outcome optimize_program(const program_optimize_request& request, const optimize::service_events& events,
                                          std::stop_token stop, const program_steps& steps = default_program_steps());

/// The outcome as the CLI prints it: a table per kernel (harness, in the program, end to end,
/// kept) and the program's line (end to end against the bound).
std::string program_outcome_text(const program_optimize_outcome& outcome);

nlohmann::json to_json(const program_optimize_outcome& outcome);

}  // namespace kblaster::engine
