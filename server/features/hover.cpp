// textDocument/hover on a kernel name: its signature and template parameters, then (once the
// file has been analysed) its performance state with the evidence, the KB's top strategies for
// that state and the last measured runtime; in an untrusted workspace, why profiling is off and
// how to turn it on.
#include "engine/source/kernel_launches.h"
#include "server/features/cuda_symbol_text.h"
#include "server/features/features.h"
#include "server/features/kernel_context.h"
#include "server/features/kernel_text.h"
#include "server/features/refusal.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

void register_hover(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_request<lsp::text_document_position_params>("textDocument/hover", execution::concurrent,
                      [&server, &state](const lsp::text_document_position_params& p, request_context& ctx) -> json {
    const auto doc = ctx.watch_document(p.uri);
    const std::size_t offset = doc->lines().offset_of(p.pos);
    const engine::cuda_symbol* symbol = engine::symbol_at(doc->symbols(), doc->text(), offset);
    if (!symbol) return nullptr;
    // The range is the word under the cursor: the definition's name or a launch site's.
    const std::string& text = doc->text();
    std::size_t begin = offset, end = offset;
    while (begin > 0 && identifier_char(text[begin - 1])) --begin;
    while (end < text.size() && identifier_char(text[end])) ++end;
    std::string md = hover_markdown(*symbol);
    if (symbol->kind == engine::cuda_symbol_kind::global_kernel) {
      const auto settings = read_editor_settings(server.settings());
      const auto k = lookup_kernel(state, settings, *doc, symbol->name);
      if (k.time) md += "\n---\n\n**In the program:** " + engine::kernel_time_line(*k.time) + "\n";
      if (k.view)
        md += "\n" + performance_markdown(*k.analysis, *k.view, k.insight,
                                          engine::launch_configurations(doc->text(), symbol->name));
      else if (k.analysis && !k.analysis->static_profile.error.empty())
        md += "\n---\n\n_No performance figures: " + k.analysis->static_profile.error + "_\n";
      if (!state.workspace_trusted()) md += "\n---\n\n_" + untrusted_note("Profiling and Optimize are off", state.editor()) + "_\n";
    }
    return lsp::hover(md, doc->to_range({begin, end}));
  });
}

}  // namespace kblaster::server
