// A verified rewrite of a captured kernel, carried back into the user's program and checked
// there: the edited copy is built and run as the original was, its launch captured again, and
// what it left in memory compared with the original's. Used by `kblaster optimize PROGRAM.cu`
// and the editor's Optimize on a program; neither touches the user's file unless this says
// `reproduced`.
#pragma once

#include "engine/capture/program_capture.h"
#include "engine/capture/program_edit.h"
#include "engine/source/program_entry.h"

#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

enum class rewrite_check {
  reproduced,      // the edited program re-captures to the same outputs
  differs,         // it does not: `mismatch` says where
  launch_changed,  // the rewrite changes the launch in a way that cannot be carried to the call sites: `launch_refusal` says why
};

struct program_rewrite {
  program_edit edit;
  std::string edited_path;  // OUT/<file>: the program with the rewrite in place
  std::string diff_path;    // OUT/program.diff
  rewrite_check check = rewrite_check::differs;
  std::string mismatch;     // for `differs`: where, on which shape
  int shapes_reproduced = 0;  // captured shapes whose re-capture reproduced the original's outputs (the first included)
  double recaptured_ms = 0; // the launch's time in the edited program
  bool replayed = false;    // the re-capture came from a recording: nothing was built or run
  int launch_sites = 0;     // call sites whose launch configuration the edit changed (the rewrite's, carried)
  std::string launch_refusal;  // for `launch_changed`
};

/// Writes the edited program and its diff into `out_dir` (a changed launch carried to every call
/// site, or `launch_changed` when it cannot be), then re-captures it with `request`'s arguments,
/// and with each of `shapes`' (capture_shapes.h), and compares each with the original's capture
/// of the same run. `program_text` is the program as it is now (an editor's buffer). Throws
/// capture_error (the edit cannot be made, the copy does not build or run).
program_rewrite rewrite_program(const capture_request& request, const capture_result& captured,
                                const std::vector<capture_result>& shapes, const std::string& program_text,
                                const std::string& best_source, const std::string& out_dir,
                                const std::function<void(const std::string&)>& progress, std::stop_token stop);

}  // namespace kblaster::engine
