// Every LSP feature registers itself here; one file per feature (as in ccls).
#pragma once

#include "server/feature_registry.h"

namespace kblaster::server {

class lsp_server;

void register_lifecycle(feature_registry& registry, lsp_server& server);
void register_text_sync(feature_registry& registry, lsp_server& server);
void register_configuration(feature_registry& registry, lsp_server& server);
void register_progress_cancel(feature_registry& registry, lsp_server& server);
void register_document_symbol(feature_registry& registry, lsp_server& server);
void register_hover(feature_registry& registry, lsp_server& server);
void register_execute_command(feature_registry& registry, lsp_server& server);

inline void register_all_features(feature_registry& registry, lsp_server& server) {
  register_lifecycle(registry, server);
  register_text_sync(registry, server);
  register_configuration(registry, server);
  register_progress_cancel(registry, server);
  register_document_symbol(registry, server);
  register_hover(registry, server);
  register_execute_command(registry, server);
}

}  // namespace kblaster::server
