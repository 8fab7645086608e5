// textDocument/didOpen, didChange, didSave, didClose.
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

namespace {
// Index the new version on a worker so that the next hover finds the symbols ready.
void warm(lsp_server& server, document_ptr doc) {
  server.run_in_background([doc = std::move(doc)] { doc->symbols(); });
}
}  // namespace

void register_text_sync(feature_registry& registry, lsp_server& server) {
  registry.on_notification("textDocument/didOpen", [&server](const json& params) {
    auto p = lsp::did_open_params::from(params);
    warm(server, server.documents().open(std::move(p.uri), std::move(p.language_id), p.version, std::move(p.text)));
  });
  registry.on_notification("textDocument/didChange", [&server](const json& params) {
    const auto p = lsp::did_change_params::from(params);
    warm(server, server.documents().change(p.uri, p.version, p.changes));
  });
  registry.on_notification("textDocument/didSave", [&server](const json& params) {
    const auto p = lsp::document_uri_params::from(params);
    server.log().debug("saved " + p.uri);
  });
  registry.on_notification("textDocument/didClose", [&server](const json& params) {
    server.documents().close(lsp::document_uri_params::from(params).uri);
  });
}

}  // namespace kblaster::server
