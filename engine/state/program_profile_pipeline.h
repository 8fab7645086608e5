// The program's profile, end to end: one run of the program under the timeline collector gives
// every kernel's time over all its launches and the GPU's busy and idle time; then ncu profiles
// one launch of each kernel worth it (program_profile.h's policy), not every launch, and each
// profiled kernel's headroom joins the table. Also the same from recordings, running nothing.
#pragma once

#include "engine/profile/program_profile.h"
#include "engine/profile/program_timeline.h"
#include "engine/state/profile_pipeline.h"

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {

/// Keeps one view per kernel (its first profiled launch), in the profile's order (largest share
/// first), and writes each one's headroom (headroom_of its SM and memory throughput) into
/// `profile`. Views of kernels the timeline does not know stay, after the others.
void join_kernel_views(program_profile& profile, std::vector<kernel_view>& views);

/// One run of the built `program` (argv) under the timeline collector: its profile (kernels by
/// GPU time, busy and idle time; no headroom yet) and the timeline it came from. nullopt with
/// `why_not` when there is none (no collector, CUPTI not loadable, the program failed).
struct timed_program {
  program_profile profile;
  program_timeline timeline;
};
std::optional<timed_program> timeline_of_program(const std::vector<std::string>& program, const build_profile_options& options,
                                                std::string& why_not);

/// Runs the built `program` (argv) under the collector, then ncu on one launch of each kernel
/// worth it. nullopt when there is no timeline (no collector, CUPTI not loadable, the program
/// failed under it), with `why_not` saying so: the caller profiles the old way. With a timeline,
/// an outcome whose `program` is set, even when ncu then fails (its `error` says why).
std::optional<profile_outcome> profile_program_by_timeline(const std::string& ncu_path, const std::vector<std::string>& program,
                                                           const build_profile_options& options, const state_namer* matcher,
                                                           std::string& why_not);

/// Profiles a program already built (`program`: its argv; the user's own build, or profile_live's
/// nvcc): by its timeline where the collector runs, else every launch under ncu, as before, with
/// `program_unavailable` saying why. `options.ncu.report_base` names the reports (empty: the
/// program's file name).
profile_outcome profile_built_program(const std::string& ncu_path, const std::vector<std::string>& program,
                                      const build_profile_options& options, const state_namer* matcher = nullptr);

/// The program's profile from a recorded timeline (the collector's JSON lines), with the
/// classified kernels of a recorded ncu report when its pages are given. Files that cannot be
/// read or parsed come back as `error`.
profile_outcome analyze_recorded_program(const std::string& timeline_path, const std::optional<std::string>& details_csv_path = {},
                                         const std::optional<std::string>& raw_csv_path = {},
                                         const std::optional<std::string>& source_csv_path = {},
                                         const state_namer* matcher = nullptr);

}  // namespace kblaster::engine
