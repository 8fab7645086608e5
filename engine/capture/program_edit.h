// Carrying a verified rewrite of a captured kernel back into the user's program. The task's
// candidate is the program up to the kernel's end followed by the generated launcher; a rewrite
// changes that part (the kernel, helpers before it, includes) and may change the launch. The
// edit puts the rewritten part in place of the program's and leaves the rest, main() included,
// as it was; a changed launch is carried to the call sites by program_rewrite (launch_carry.h).
#pragma once

#include "engine/capture/capture_launcher.h"
#include "engine/capture/kernel_capture.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine {

struct program_edit {
  std::string edited;            // the whole program with the rewrite in place
  std::string captured_launch;   // "dim3(63, 63, 1), dim3(16, 16, 1), 0, kb_stream" from the generated launcher
  std::string rewritten_launch;  // the same from the rewrite
  bool launch_changed = false;
  std::size_t rewritten_end = 0;  // edited[0, rewritten_end) is the rewrite's part, the rest the program's
  std::vector<std::string> call_sites;  // the program's launch configurations of the kernel, as written
};

/// Applies `rewritten` (a candidate of the capture's task) to `program`. `generated` is the
/// task's original candidate (kernel.cu as written). Throws capture_error when the program no
/// longer starts with what was captured, or the rewrite dropped the launcher's marker.
program_edit edit_program(const std::string& program, const std::string& generated, const std::string& rewritten,
                          const std::string& kernel_name);

/// The first element of a written allocation that differs beyond the dtype's tolerance.
struct allocation_mismatch {
  std::size_t allocation = 0;
  std::string name;
  std::uint64_t element = 0, count = 0;  // the first, and how many
  std::string got, expected;
};

/// Compares what `actual`'s launch left in memory with `expected`'s, allocation by allocation
/// (floating point within the per-dtype tolerance, widened as the task widens it where the
/// original varies run to run; everything else bit for bit; an allocation `expected` left alone
/// must be left alone). `views` are `expected`'s. nullopt when they agree.
/// Throws capture_error when the two captures do not have the same allocations.
std::optional<allocation_mismatch> compare_capture_outputs(const kernel_capture& expected, const kernel_capture& actual,
                                                           const std::vector<allocation_view>& views);

/// "out, parameter 1: 12 of 1000000 elements differ; first at [4087] (got 0.1, expected 0.36)".
std::string describe(const allocation_mismatch& m);

}  // namespace kblaster::engine
