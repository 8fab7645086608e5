// A unified diff of two texts, line by line (what `diff -u` prints), for the best kernel against
// the input: shown in the CLI, written as best.diff, and turned into an editor edit.
#pragma once

#include <string>

namespace kblaster::engine::optimize {

/// `diff -u`-style text with `context` lines around each change; empty when the texts are equal.
/// Labels name the two sides in the "---"/"+++" header.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_label,
                         const std::string& after_label, int context = 3);

}  // namespace kblaster::engine::optimize
