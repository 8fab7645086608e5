// textDocument/codeLens above each kernel: its share of the program's GPU time over all its
// launches (from the program's timeline), its state and last runtime (or why it has none:
// "analysing…" while the analysis runs, "not profiled (no GPU)"), and "Optimize", titled with
// what to do first when it cannot run yet (optimize_gate.h); at the top of a program's file, the
// program's GPU busy and idle time.
#include "server/features/features.h"
#include "server/features/kernel_context.h"
#include "server/features/kernel_text.h"
#include "server/features/cuda_document.h"
#include "server/features/optimize_gate.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

namespace {

// The kernel's name; from the start of its declaration when that is on an earlier line (a
// `template <...>` or `__launch_bounds__` line above the name), where the editor puts the lens.
protocol::range lens_range(const document_snapshot& doc, const engine::cuda_symbol& kernel) {
  const auto name = doc.to_range(kernel.name_range);
  const auto head = doc.lines().position_of(kernel.full_range.begin);
  return head.line < name.start.line ? protocol::range{head, name.end} : name;
}

}  // namespace

void register_code_lens(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_request<lsp::document_uri_params>("textDocument/codeLens", execution::concurrent,
                      [&server, &state](const lsp::document_uri_params& p, request_context& ctx) -> json {
    const auto doc = ctx.watch_document(p.uri);
    const auto settings = read_editor_settings(server.settings());
    auto& analyzer = state.analyzer(settings);
    json lenses = json::array();
    const auto analysis = analyzer.latest(document_path(*doc));
    if (const auto* program = analysis ? program_profile_of(*analysis) : nullptr) {
      const json top = {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}};
      lenses.push_back({{"range", top}, {"command", {{"title", engine::program_line(*program)}, {"command", "kblaster.profile"},
                                                      {"arguments", json::array({{{"uri", doc->uri()}}})}}}});
    }
    for (const auto& s : doc->symbols()) {
      ctx.check_cancelled();
      if (s.kind != engine::cuda_symbol_kind::global_kernel || !s.is_definition) continue;
      // Above the whole declaration: a template kernel's `template <...>` line, not inside it.
      const json range = lens_range(*doc, s);
      const json args = json::array({{{"uri", doc->uri()}, {"kernel", s.name}}});
      const auto k = lookup_kernel(state, settings, *doc, s.name);
      std::string title = k.view ? performance_line(*k.view, k.insight, live_skip_words(*k.analysis))
                          : k.analysis ? (k.analysis->static_profile.error.empty()
                                              ? std::string("not analysed: ptxas reported nothing for this kernel")
                                              : std::string("does not compile: see Problems"))
                          // The analysis starts by itself on open: say so while it runs.
                          : analyzer.pending(document_path(*doc)) ? "analysing…"
                          : settings.analyze ? "not analysed yet (save to analyse)"
                                             : "not analysed: analysis is off (analysis.enabled)";
      // A lens cannot be disabled, only titled: when Optimize cannot run yet, the title says
      // what to do first, and the command answers with the refusal and its remedy.
      const auto blocked = optimize_blocker(state, settings, *doc, "kblaster.optimize", s.name, gate_scope::document);
      const std::string optimize_title = blocked ? "Optimize: " + first_step(blocked->kind, state.editor()) : "Optimize";
      if (k.time)
        lenses.push_back({{"range", range}, {"command", {{"title", engine::kernel_time_line(*k.time)}, {"command", "kblaster.profile"},
                                                         {"arguments", args}}}});
      lenses.push_back({{"range", range}, {"command", {{"title", title}, {"command", "kblaster.profile"}, {"arguments", args}}}});
      lenses.push_back({{"range", range}, {"command", {{"title", optimize_title}, {"command", "kblaster.optimize"}, {"arguments", args}}}});
    }
    return lenses;
  });
}

}  // namespace kblaster::server
