// A unified diff of two source texts, line by line (what `diff -u` prints): the best kernel against
// the input (shown in the CLI, written as best.diff, turned into an editor edit) and a rewritten
// program against the user's. Pure text, here so that the capture and the loop may both use it.
#pragma once

#include <string>

namespace kblaster::engine {

/// `diff -u`-style text with `context` lines around each change; empty when the texts are equal.
/// Labels name the two sides in the "---"/"+++" header.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_label,
                         const std::string& after_label, int context = 3);

}  // namespace kblaster::engine
