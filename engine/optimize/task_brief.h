// What the model is told about the task a kernel serves, before the kernel itself: what it must
// compute (the reference: the task's TorchScript source, or, for a kernel reference such as a
// captured launch's original, that kernel when the version being rewritten is no longer it) and
// the shapes and dtypes it is verified and timed on. Nothing padded: a reference identical to the
// current source is named, not repeated.
#pragma once

#include "engine/task/task.h"

#include <string>

namespace kblaster::engine::optimize {

/// The brief of `task` for a rewrite of `current_source`; at most about `max_chars` characters
/// (a long reference is cut, saying so).
std::string task_brief(const task_spec& task, const std::string& current_source, std::size_t max_chars = 6000);

}  // namespace kblaster::engine::optimize
