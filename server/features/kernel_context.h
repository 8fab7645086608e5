// Everything the features know about one kernel of an open document: its latest analysis,
// its view there, its task and the KB's insight. Looked up the same way by hover, code lens,
// code action and the commands.
#pragma once

#include "server/document_store.h"
#include "server/features/editor_state.h"

#include <memory>
#include <string>

namespace kblaster::server {

/// One kernel's context. `view` is null until the file has been analysed.
struct kernel_context {
  std::shared_ptr<const engine::file_analysis> analysis;
  const engine::kernel_view* view = nullptr;
  engine::kernel_insight insight;
  /// The kernel over all its launches in the program's timeline (its share of the GPU time);
  /// null without a timeline or when the run launched it not at all.
  const engine::kernel_time* time = nullptr;
};

/// The program's profile of the file's latest live analysis, or null.
const engine::program_profile* program_profile_of(const engine::file_analysis& analysis);

/// The architecture KB statistics are read for: the setting, else the local GPU's, else all.
std::string kb_arch(editor_state& state, const editor_settings& settings);

/// The context of kernel `name` in `doc`; the KB is queried only when the kernel has a view.
kernel_context lookup_kernel(editor_state& state, const editor_settings& settings, const document_snapshot& doc,
                             const std::string& name);

}  // namespace kblaster::server
