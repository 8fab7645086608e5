// `kblaster optimize FILE.cu --kernel NAME -- ARGS` on the user's own program (no task): capture
// the kernel's launch first, optimize the capture's task, then carry the best rewrite back into
// a copy of the program, re-capture that copy and check it reproduces the verified outputs.
#pragma once

#include "engine/capture/program_capture.h"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::cli {

/// A .cu file that is a program (defines main, or `run` names the program the user's build
/// makes) rather than a task (no kblaster-task comment, no NAME.task.json beside it).
bool is_program_source(const std::string& path, const engine::program_run& run = {});

/// `--run` / `--build` as given ("make -C build app"): split at whitespace, no shell quoting.
std::vector<std::string> command_words(const std::string& line);

struct program_target {
  engine::capture_request request;
  engine::capture_result captured;
  std::vector<engine::capture_result> shapes;  // request.run.shapes, captured the same way
};

/// Captures `request` and its other shapes, printing its phases to stderr. Throws engine::capture_error.
program_target capture_target(engine::capture_request request);

/// After a run: writes OUT/<file> (the program with `best_source` in place) and OUT/program.diff,
/// re-captures the edited copy (unless the launch changed, which is reported instead) and, when
/// its outputs match and `apply` is set, writes it over the user's file (the original kept as
/// OUT/<file>.orig). Prints what it did to `out`. Returns false when the edited program fails.
bool carry_back(const program_target& target, const std::string& best_source, const std::string& out_dir, bool apply,
                std::ostream& out);

}  // namespace kblaster::cli
