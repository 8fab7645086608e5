// textDocument/didOpen, didChange, didSave, didClose. Opening and saving a CUDA file starts
// its analysis (diagnostics.cpp); closing it clears its diagnostics.
#include "server/features/cuda_document.h"
#include "server/features/diagnostics.h"
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

void register_text_sync(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_notification<lsp::did_open_params>("textDocument/didOpen", [&server, &state](lsp::did_open_params p) {
    auto doc = server.documents().open(std::move(p.uri), std::move(p.language_id), p.version, std::move(p.text));
    warm(server, doc);
    publish_analysis(server, state, std::move(doc));
  });
  registry.on_typed_notification<lsp::did_change_params>("textDocument/didChange", [&server](const lsp::did_change_params& p) {
    warm(server, server.documents().change(p.uri, p.version, p.changes));
  });
  registry.on_typed_notification<lsp::document_uri_params>("textDocument/didSave",
                                                           [&server, &state](const lsp::document_uri_params& p) {
    server.log().debug("saved " + p.uri);
    if (auto doc = server.documents().get(p.uri)) publish_analysis(server, state, std::move(doc));
  });
  registry.on_typed_notification<lsp::document_uri_params>("textDocument/didClose",
                                                           [&server, &state](const lsp::document_uri_params& p) {
    const auto& uri = p.uri;
    const auto doc = server.documents().get(uri);
    server.documents().close(uri);
    if (doc && is_cuda_document(*doc) && read_editor_settings(server.settings()).analyze) clear_analysis(server, state, uri);
  });
}

}  // namespace kblaster::server
