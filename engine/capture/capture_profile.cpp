// profile_captured_launches: capture, then the original kernel verified against its own capture
// and profiled by the live evaluator (ncu over the harness, filtered to the launch), its pages
// classified like any profile.
#include "engine/capture/capture_profile.h"

#include "engine/profile/ncu_runner.h"
#include "engine/task/task.h"
#include "support/files.h"
#include "support/text.h"

#include <cstdio>
#include <filesystem>
#include <memory>

namespace kblaster::engine {
namespace fs = std::filesystem;

std::string captured_profile_origin(const capture_result& captured, bool reused) {
  const auto& c = captured.capture;
  return captured.provenance + " (grid " + dims_text(c.grid) + ", block " + dims_text(c.block) + "), captured" +
         origin_note(captured) + " and replayed alone under ncu" +
         (reused ? " (ncu's pages kept from an earlier profile of this kernel on the same captured data)" : "") + "; " +
         // "0.0079 ms", "0.331 ms": four decimals below a tenth of a millisecond, else three.
         support::ms_text(c.time_ms, c.time_ms < 0.1 ? 4 : 3) + " in the program";
}

profile_outcome profile_captured_launches(const captured_profile_options& o, std::stop_token stop) {
  profile_outcome out;
  // No driver: no kernel of the file can be captured, and nothing is built or run to find out.
  if (const auto blocked = capture_blocker(o.base); !blocked.empty()) {
    for (const auto& kernel : o.kernels) out.not_profiled[kernel] = "its launch cannot be captured here (" + blocked + ")";
    out.warnings.push_back("no kernel was profiled: " + blocked);
    return out;
  }
  std::unique_ptr<optimize::harness_evaluator> evaluator;  // one harness for every kernel of the file
  std::size_t done = 0;
  for (const auto& kernel : o.kernels) {
    if (stop.stop_requested()) {
      out.warnings.push_back("stopped before profiling " + kernel);
      break;
    }
    if (done == o.max_kernels) {
      out.not_profiled[kernel] = "a save profiles the first " + std::to_string(o.max_kernels) + " kernels of a file";
      continue;
    }
    ++done;
    auto request = o.base;
    request.kernel = kernel;
    capture_result captured;
    try {
      captured = capture_program(request, o.progress, stop);
    } catch (const capture_error& e) {
      out.not_profiled[kernel] = "its launch could not be captured (" + support::first_line(e.what()) + ")";
      continue;
    }
    task_spec task;
    try {
      task = load_task(captured.task.dir);
    } catch (const task_error& e) {
      out.not_profiled[kernel] = "the capture's task: " + support::first_line(e.what());
      continue;
    }
    if (!evaluator) {
      auto options = o.evaluator;
      if (!options.on_device_wait) options.on_device_wait = o.progress;  // said where the save's progress is
      evaluator = std::make_unique<optimize::harness_evaluator>(std::vector<task_spec>{task}, options);
    }
    else
      evaluator->add_task(task, stop);
    if (o.progress) o.progress("profiling " + kernel + " from its capture, alone under ncu");
    optimize::evaluation_request ask;
    ask.time = false;  // ncu's duration is the kernel's own; the harness's timing adds the launcher's copies
    ask.stop = stop;
    const auto e = evaluator->evaluate(task.name, support::read_file(task.kernel), ask);
    if (optimize::cancelled(e)) {
      out.warnings.push_back("stopped while profiling " + kernel);
      break;
    }
    if (!e.correct) {
      // The original replayed on its own capture must reproduce it: if not, the capture is not
      // a faithful picture of the launch, and a profile of it would not be one either.
      out.not_profiled[kernel] = "replayed on its capture, the original kernel does not reproduce what it wrote in the program (" +
                                 e.check + ": " + support::first_line(e.reason) + ")";
      continue;
    }
    if (!e.profile || e.profile->source != "ncu" || e.profile->report_path.empty()) {
      out.not_profiled[kernel] = "ncu did not profile it: " + (e.profile_note.empty() ? std::string("no report") : e.profile_note);
      continue;
    }
    const auto pages = ncu_pages_beside(e.profile->report_path);
    auto one = analyze_recorded(pages.details, fs::exists(pages.raw) ? std::optional(pages.raw) : std::nullopt,
                                fs::exists(pages.source) ? std::optional(pages.source) : std::nullopt);
    if (!one.error.empty() || one.kernels.empty()) {
      out.not_profiled[kernel] = "its profile could not be analysed: " +
                                 (one.error.empty() ? std::string("no kernel in it") : support::first_line(one.error));
      continue;
    }
    // The range holds the one replayed launch; should ncu have seen more, the longest is it.
    const kernel_view* view = &one.kernels.front();
    for (const auto& v : one.kernels)
      if (v.signature.function == kernel && (view->signature.function != kernel ||
                                             v.signature.sol.duration_us.value_or(0) > view->signature.sol.duration_us.value_or(0)))
        view = &v;
    out.kernels.push_back(*view);
    if (out.report_path.empty()) out.report_path = e.profile->report_path;
    out.origins[view->signature.function.empty() ? kernel : view->signature.function] =
        captured_profile_origin(captured, e.profile->view.contains("reused"));
  }
  return out;
}

}  // namespace kblaster::engine
