// window/workDoneProgress/cancel: the user pressed cancel on a progress notification.
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

void register_progress_cancel(feature_registry& registry, lsp_server& server) {
  registry.on_notification("window/workDoneProgress/cancel", [&server](const protocol::json& params) {
    server.cancel_progress(protocol::lsp::required_field(params, "token"));
  });
}

}  // namespace kblaster::server
