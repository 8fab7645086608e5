// Every LSP feature registers itself here; one file per feature (as in ccls).
#pragma once

#include "server/feature_registry.h"
#include "server/features/editor_state.h"

#include <memory>

namespace kblaster::server {

class lsp_server;

void register_lifecycle(feature_registry& registry, lsp_server& server, editor_state& state);
void register_text_sync(feature_registry& registry, lsp_server& server, editor_state& state);
void register_configuration(feature_registry& registry, lsp_server& server);
void register_progress_cancel(feature_registry& registry, lsp_server& server);
void register_document_symbol(feature_registry& registry, lsp_server& server);
void register_hover(feature_registry& registry, lsp_server& server, editor_state& state);
void register_code_lens(feature_registry& registry, lsp_server& server, editor_state& state);
void register_code_action(feature_registry& registry, lsp_server& server, editor_state& state);
void register_execute_command(feature_registry& registry, lsp_server& server, editor_state& state);
void register_workspace_trust(feature_registry& registry, lsp_server& server, editor_state& state);
void register_machine_status(feature_registry& registry, lsp_server& server, editor_state& state);
void register_kernel_at(feature_registry& registry, lsp_server& server);

/// Registers every feature. The shared editor state lives as long as the registry: a handler
/// keeps it alive (the server joins its workers before the registry goes).
inline void register_all_features(feature_registry& registry, lsp_server& server) {
  auto state = std::make_shared<editor_state>();
  registry.on_notification("$/kblaster/state", [state](const protocol::json&) {});  // owns `state`
  register_lifecycle(registry, server, *state);
  register_text_sync(registry, server, *state);
  register_configuration(registry, server);
  register_progress_cancel(registry, server);
  register_document_symbol(registry, server);
  register_hover(registry, server, *state);
  register_code_lens(registry, server, *state);
  register_code_action(registry, server, *state);
  register_execute_command(registry, server, *state);
  register_workspace_trust(registry, server, *state);
  register_machine_status(registry, server, *state);
  register_kernel_at(registry, server);
}

}  // namespace kblaster::server
