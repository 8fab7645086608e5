#include "cli/optimize_summary.h"
#include "support/text.h"

#include <iostream>

namespace kblaster::cli {

namespace fs = std::filesystem;
using engine::optimize::stop_kind;

int print_optimize_summary(const engine::optimize::optimize_outcome& o, std::ostream& out) {
  const auto& r = o.result;
  const auto& name = o.task.name;
  if (r.stop_reason == stop_kind::cancelled && !r.input_ms) {
    out << name << ": interrupted before the input kernel was measured; run the same command again.\n";
    return 0;
  }
  out << name << ": " << kblaster::support::times_text(r.best_speedup, 2) << " over the input";
  if (r.input_ms && r.best_ms)
    out << " (" << kblaster::support::ms_text(*r.input_ms, 4) << " -> " << kblaster::support::ms_text(*r.best_ms, 4) << ")";
  // A capture's reference is the input kernel itself: no second comparison worth printing.
  if (r.reference_ms && r.best_ms && !o.is_program())
    out << ", " << kblaster::support::times_text(*r.reference_ms / *r.best_ms, 2) << " over the reference";
  out << "\n  " << kblaster::support::count_text(r.candidates, "candidate") << ", "
      << kblaster::support::count_text(static_cast<long long>(r.attempt_ids.size()), "attempt") << " recorded in the KB, " << r.tokens
      << " tokens, " << kblaster::support::fixed_text(r.gpu_seconds, 1) << " GPU s; stopped: " << r.stop_reason.to_string() << "\n";
  if (o.replayed) out << "  (a REPLAY: GPU results came from " << o.evaluator_note << ")\n";
  out << "  best kernel: " << (o.out_dir / ("best" + fs::path(o.task.kernel).extension().string())).string()
      << "\n  diff:        " << (o.out_dir / "best.diff").string() << "\n  report:      " << (o.out_dir / "report.md").string()
      << "\n";
  if (r.stop_reason == stop_kind::cancelled)
    out << "  interrupted: run the same command again to resume (the unfinished iteration's candidates wait in the "
           "checkpoint and go into the KB once it is whole).\n";
  if (r.stop_reason == stop_kind::waiting) {
    out << "  waiting for the model: " << o.waiting_for << " (nothing done is lost: the same command resumes)\n";
    return 75;
  }
  if (!o.rewrite_error.empty()) {
    std::cerr << "kblaster optimize: carrying the rewrite back into the program: " << o.rewrite_error << "\n";
    return 1;
  }
  if (o.rewrite) {
    out << "  your program, rewritten: " << o.rewrite->edited_path << " (diff: " << o.rewrite->diff_path << ")\n";
    for (const auto& line : engine::optimize::describe_rewrite(*o.rewrite, *o.captured)) out << "  " << line << "\n";
    if (o.rewrite->check == engine::rewrite_check::differs) {
      out << "  your file was left unchanged\n";
      return 1;
    }
    if (!o.applied_to.empty())
      out << "  applied to " << o.applied_to.string() << " (the original is kept as " << o.applied_backup.string() << ")\n";
    else if (o.rewrite->check == engine::rewrite_check::launch_changed)
      out << "  your file was left unchanged\n";
  }
  if (r.stop_reason == stop_kind::error) {
    std::cerr << "kblaster optimize: " << r.stop_reason.to_string() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kblaster::cli
