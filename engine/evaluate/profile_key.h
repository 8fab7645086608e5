// The key under which a profile is kept (profile_cache.h): what decides what ncu measures, and
// nothing that does not. A task is named by the content of its files, not by where they are, so
// that the editor's profile on save and Optimize's first profile of the same captured launch
// share it (their captures may sit in different folders), and a re-capture that changed the
// launch's data at the same place does not find the old profile.
#pragma once

#include "engine/task/task.h"

#include <string>

namespace kblaster::engine::optimize {

/// The task as the profiled call sees it: to_json(spec) without its name, description and folder,
/// each file (kernels, reference, captured inputs) replaced by a hash of its bytes.
std::string profiled_task_identity(const task_spec& spec);

/// ncu as a file: its path, size and modification time (a new ncu, a new key).
std::string tool_identity(const std::string& path);

/// What one profile is asked: the candidate's source (by its bytes: the evaluator's code hash also
/// holds the task's name), the task, the GPU, ncu and what ncu is told to collect (sections,
/// metrics, clocks, range; not where it writes).
struct profile_request_identity {
  std::string source_path;
  const task_spec* task = nullptr;
  std::string arch;
  std::string device_name;
  std::string ncu_path;
  std::string asked;
};

/// profile_cache::key_of over the parts above.
std::string profile_key(const profile_request_identity& r);

}  // namespace kblaster::engine::optimize
