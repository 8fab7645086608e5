// The one decision "is this a task or a program?".
#include "engine/analysis/file_role.h"

#include "support/files.h"

#include <filesystem>

namespace kblaster::engine {

namespace fs = std::filesystem;

std::string file_role::why_neither() const {
  if (kind != file_role_kind::neither) return "";
  if (!task.error.empty()) return "its task cannot be read: " + task.error;
  return "it has no task and no main(): create a task for it, or name the program your build makes (run.command)";
}

file_role role_of(const std::string& path, const std::string& text, const program_run& run) {
  file_role role;
  std::error_code ec;
  const fs::path p(path);
  // A task folder or a task's own spec file: there is nothing else it could be.
  if (fs::is_directory(p, ec) || p.extension() == ".json") {
    try {
      role.task.task = load_task(path);
      role.task.where = fs::is_directory(p, ec) ? (p / "task.json").string() : path;
      role.kind = file_role_kind::task;
    } catch (const std::exception& e) {
      role.task.error = e.what();
    }
    return role;
  }
  role.task = find_task_for(path, text);
  role.runs_as_program = runs_as_program(text, run);
  if (role.task.task) role.kind = file_role_kind::task;
  else if (role.task.error.empty() && role.runs_as_program) role.kind = file_role_kind::program;
  return role;
}

file_role file_role::for_kernel(const std::string& kernel) const {
  if (kernel.empty() || task.error.empty() || task.is_for(kernel)) return *this;
  file_role other;  // the broken task is another kernel's: this one is as if it were not there
  other.runs_as_program = runs_as_program;
  other.kind = runs_as_program ? file_role_kind::program : file_role_kind::neither;
  return other;
}

file_role role_of(const std::string& path, const program_run& run) {
  return role_of(path, support::read_file_if_exists(path).value_or(""), run);
}

}  // namespace kblaster::engine
