// The checks in front of Optimize (optimize_gate.h).
#include "server/features/optimize_gate.h"

#include "engine/analysis/file_role.h"
#include "engine/capture/program_capture.h"
#include "engine/optimize/example_replay.h"
#include "server/features/cuda_document.h"
#include "support/files.h"

#include <filesystem>

namespace kblaster::server {

refusal no_gpu_refusal(const std::string& command, const std::string& kernel, const std::string& uri) {
  refusal r{refusal_kind::no_gpu, command, kernel, uri, "this machine has no NVIDIA GPU (nvidia-smi found none) to measure candidates on"};
  // What this machine can run instead: the shipped example, replayed (kblaster.replayExample).
  if (const auto example = engine::optimize::find_example_replay()) r.facts["example"] = example->name;
  return r;
}

std::optional<refusal> optimize_blocker(editor_state& state, const editor_settings& settings, const document_snapshot& doc,
                                        const std::string& command, const std::string& kernel, gate_scope scope) {
  const auto refused = [&](refusal_kind kind, std::string detail = "") {
    return refusal{kind, command, kernel, doc.uri(), std::move(detail)};
  };
  if (!state.workspace_trusted()) return refused(refusal_kind::untrusted);
  // The GPU next: without one (and without recorded results to replay) nothing else the user
  // could set up here (a task, the program to run) would let Optimize measure, so it is said
  // first, with what works instead (refusal.h: the example replayed, the folder on a GPU machine).
  if (settings.replay_harness.empty() && state.analyzer(settings).capabilities().gpu_arch.empty())
    return no_gpu_refusal(command, kernel, doc.uri());
  const std::string path = document_path(doc);
  auto run = program_run_of(settings);
  // The engine's one answer, as the run will take it: a broken task file blocks its own kernel only.
  const auto file = engine::role_of(path, doc.text(), run.run);
  const auto role = file.for_kernel(kernel);
  const bool program = role.is_program();
  if (!role.is_task() && !program) {
    if (role.task.error.empty()) {
      auto r = refused(refusal_kind::no_task);
      // The file's task file is another kernel's: no second one can be created beside it.
      if (!file.task.where.empty()) r.facts["taskFile"] = file.task.where;
      return r;
    }
    auto r = refused(refusal_kind::task_unreadable, role.task.error);
    if (!role.task.where.empty()) r.facts["taskFile"] = role.task.where;  // the button that opens it
    return r;
  }
  if (scope == gate_scope::document) return std::nullopt;
  if (program) {
    // The program is built and run from the file on disk.
    if (support::read_file_if_exists(path).value_or("") != doc.text())
      return refused(refusal_kind::not_saved, std::filesystem::path(path).filename().string());
    // Its launch is captured by running it, which needs the driver whatever measures the
    // candidates afterwards (a recorded capture needs nothing).
    run.source = path;
    run.kernel = kernel;
    if (const auto blocker = engine::capture_blocker(run); !blocker.empty()) {
      auto r = refused(refusal_kind::no_gpu, blocker);
      r.facts = no_gpu_refusal(command, kernel, doc.uri()).facts;
      return r;
    }
  }
  return std::nullopt;
}

}  // namespace kblaster::server
