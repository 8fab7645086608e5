// A recorded report served as the live profile, marked as replayed.
#include "engine/analysis/replayed_profiler.h"

#include "engine/state/program_profile_pipeline.h"

namespace kblaster::engine {

live_profiler replayed_profiler(std::string details_csv, std::string timeline) {
  return [details_csv = std::move(details_csv), timeline = std::move(timeline)](
             const std::string&, const std::optional<task_spec>&, const file_analysis_options&, std::stop_token) {
    // With the program's recorded timeline, its kernels' shares and the GPU's idle time too.
    auto out = timeline.empty() ? analyze_recorded(details_csv) : analyze_recorded_program(timeline, details_csv);
    out.replayed_from = details_csv;
    out.warnings.push_back("replayed from " + details_csv);
    return out;
  };
}

}  // namespace kblaster::engine
