// What a file is to "optimize this kernel": the one place that decides it, for the CLI, the
// editor's Optimize, its code actions and the analysis on save. A task (a task folder, a task's
// .json, or a .cu whose task is embedded, beside it as NAME.task.json, or a task.json in its
// folder naming it) wins over a program (a .cu that defines main, or one the user's own build
// runs); anything else can be neither optimized nor profiled live until a task exists.
#pragma once

#include "engine/analysis/file_analysis.h"
#include "engine/capture/program_capture.h"

#include <string>

namespace kblaster::engine {

enum class file_role_kind {
  task,     ///< `task.task` holds it
  program,  ///< its kernels are captured from a run of the program
  neither,  ///< no task and no main (or the task file is broken: `task.error`)
};

struct file_role {
  file_role_kind kind = file_role_kind::neither;
  task_lookup task;  ///< the lookup made (its error says why a task file could not be used)

  /// The file would be a program but for its task (it defines main(), or run.command runs it).
  bool runs_as_program = false;

  bool is_task() const { return kind == file_role_kind::task; }
  bool is_program() const { return kind == file_role_kind::program; }
  /// Why neither a task nor a program, in one sentence; empty otherwise.
  std::string why_neither() const;
  /// The role for one kernel of the file. A task file that cannot be read stands in the way of
  /// the kernels it is for only (task_lookup::kernels, those its kb_forward launches): any other
  /// kernel is what it would be without that file, a program's kernel or neither. Everything
  /// else, and an empty `kernel` (the whole file), is the file's role.
  file_role for_kernel(const std::string& kernel) const;
};

/// The role of `path`, whose current text is `text` (an editor's buffer may differ from the
/// disk), for a program run as `run` says. A folder or a .json is read as a task.
file_role role_of(const std::string& path, const std::string& text, const program_run& run);

/// The same, reading the text from disk.
file_role role_of(const std::string& path, const program_run& run);

}  // namespace kblaster::engine
