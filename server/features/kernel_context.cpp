// Kernel lookup shared by the features.
#include "server/features/kernel_context.h"

#include "server/features/cuda_document.h"

namespace kblaster::server {

std::string kb_arch(editor_state& state, const editor_settings& settings) {
  if (!settings.arch.empty()) return settings.arch;
  const std::string gpu = state.analyzer(settings).capabilities().gpu_arch;
  return gpu.rfind("sm_", 0) == 0 ? gpu : "";
}

const engine::program_profile* program_profile_of(const engine::file_analysis& analysis) {
  return analysis.live_profile && analysis.live_profile->program ? &*analysis.live_profile->program : nullptr;
}

kernel_context lookup_kernel(editor_state& state, const editor_settings& settings, const document_snapshot& doc,
                             const std::string& name) {
  kernel_context out;
  out.analysis = state.analyzer(settings).latest(document_path(doc));
  if (!out.analysis) return out;
  if (const auto* program = program_profile_of(*out.analysis)) out.time = program->kernel(name);
  out.view = out.analysis->kernel(name);
  if (!out.view) return out;
  const std::string task = out.analysis->task.task ? out.analysis->task.task->name : "";
  out.insight = state.insight().query(settings.kb_path, *out.view, kb_arch(state, settings), task);
  return out;
}

}  // namespace kblaster::server
