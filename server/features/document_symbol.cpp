// textDocument/documentSymbol: the kernels, device functions and launchers of a CUDA file.
#include "server/features/cuda_symbol_text.h"
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

void register_document_symbol(feature_registry& registry, lsp_server&) {
  registry.on_typed_request<lsp::document_uri_params>("textDocument/documentSymbol", execution::concurrent,
                                                      [](const lsp::document_uri_params& p, request_context& ctx) {
    const auto doc = ctx.watch_document(p.uri);
    json symbols = json::array();
    for (const auto& s : doc->symbols()) {
      ctx.check_cancelled();
      symbols.push_back(lsp::document_symbol(s.qualified_name, symbol_detail(s),
                                             lsp::symbol_kind::function, doc->to_range(s.full_range),
                                             doc->to_range(s.name_range)));
    }
    return symbols;
  });
}

}  // namespace kblaster::server
