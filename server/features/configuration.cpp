// workspace/didChangeConfiguration: settings pushed by the editor.
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

void apply_settings(lsp_server& server);  // lifecycle.cpp

void register_configuration(feature_registry& registry, lsp_server& server) {
  registry.on_notification("workspace/didChangeConfiguration", [&server](const protocol::json& params) {
    const protocol::json& settings = protocol::lsp::required_field(params, "settings");
    // Editors send either our section ({"kblaster": {...}}) or everything they have.
    const auto ours = settings.find("kblaster");
    const protocol::json& patch = ours != settings.end() ? *ours : settings;
    if (!patch.is_object()) return;
    server.merge_settings(patch);
    apply_settings(server);
  });
}

}  // namespace kblaster::server
