// textDocument/codeLens above each kernel: its state and last runtime, and "Optimize" (which
// says so when the workspace is not trusted: a lens cannot be disabled, only titled).
#include "server/features/features.h"
#include "server/features/kernel_context.h"
#include "server/features/kernel_text.h"
#include "server/features/workspace_trust.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

void register_code_lens(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_request<lsp::document_uri_params>("textDocument/codeLens", execution::concurrent,
                      [&server, &state](const lsp::document_uri_params& p, request_context& ctx) -> json {
    const auto doc = ctx.watch_document(p.uri);
    const auto settings = read_editor_settings(server.settings());
    const std::string optimize_title = state.workspace_trusted() ? "Optimize" : "Optimize (off: workspace not trusted)";
    json lenses = json::array();
    for (const auto& s : doc->symbols()) {
      ctx.check_cancelled();
      if (s.kind != engine::cuda_symbol_kind::global_kernel || !s.is_definition) continue;
      const json range = doc->to_range(s.name_range);
      const json args = json::array({{{"uri", doc->uri()}, {"kernel", s.name}}});
      const auto k = lookup_kernel(state, settings, *doc, s.name);
      std::string title = k.view ? performance_line(*k.view, k.insight)
                                 : k.analysis ? (k.analysis->static_profile.error.empty()
                                                     ? std::string("not analysed: ptxas reported nothing for this kernel")
                                                     : std::string("does not compile: see Problems"))
                                              : "not analysed yet (save to analyse)";
      lenses.push_back({{"range", range}, {"command", {{"title", title}, {"command", "kblaster.profile"}, {"arguments", args}}}});
      lenses.push_back({{"range", range}, {"command", {{"title", optimize_title}, {"command", "kblaster.optimize"}, {"arguments", args}}}});
    }
    return lenses;
  });
}

}  // namespace kblaster::server
