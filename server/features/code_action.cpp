// textDocument/codeAction on a kernel: "Optimize `k`", "Apply `technique`" for the KB's top
// three strategies in its state, and "Create a task for `k`" when it has none and is not in a
// program (a file with main: Optimize captures the kernel's launch from the program's own run).
// Optimize is always there; when it cannot run yet (optimize_gate.h) its title says what to do
// first ("Optimize k: trust this folder first") and the techniques are left out.
#include "server/features/features.h"
#include "support/text.h"
#include "server/features/kernel_context.h"
#include "server/features/cuda_document.h"
#include "server/features/optimize_gate.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

namespace {

json command_action(const std::string& title, const std::string& command, const json& args, const std::string& kind) {
  return {{"title", title}, {"kind", kind}, {"command", {{"title", title}, {"command", command}, {"arguments", json::array({args})}}}};
}

}  // namespace

void register_code_action(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_request<lsp::code_action_params>("textDocument/codeAction", execution::concurrent,
                      [&server, &state](const lsp::code_action_params& p, request_context& ctx) -> json {
    const std::string& uri = p.uri;
    const auto doc = ctx.watch_document(uri);
    const protocol::range& r = p.where;
    // The kernel whose definition holds the cursor (or the selection's start), or a launch of one.
    const engine::cuda_symbol* kernel = engine::enclosing_kernel(doc->symbols(), doc->text(), doc->lines().offset_of(r.start));
    json actions = json::array();
    if (!kernel) return actions;
    const auto settings = read_editor_settings(server.settings());
    const json args = {{"uri", uri}, {"kernel", kernel->name}};
    const std::string& name = kernel->name;  // titles are plain text: no Markdown backticks
    // Optimize is always offered, never `disabled` (VS Code leaves a disabled action out of the
    // Quick Fix list and shows no reason): when it cannot run yet, its title says what to do
    // first, and its command answers with a refusal whose button does it (refusal.h).
    const auto blocked = optimize_blocker(state, settings, *doc, "kblaster.optimize", name, gate_scope::document);
    actions.push_back(command_action(blocked ? "Optimize " + name + ": " + first_step(blocked->kind, state.editor())
                                             : "Optimize " + name,
                                     "kblaster.optimize", args, "refactor.rewrite"));
    if (!blocked) {
      const auto k = lookup_kernel(state, settings, *doc, name);
      for (const auto& s : k.view ? k.insight.strategies : std::vector<engine::strategy>{}) {
        json a = args;
        a["technique"] = s.technique;
        actions.push_back(command_action("Apply " + s.technique + " (predicted " + support::fixed_text(s.predicted_speedup, 2) + "×)",
                                         "kblaster.applyTechnique",
                                         a, "refactor.rewrite"));
      }
    }
    // A program with more than one kernel: the whole program, its kernels in the order they pay.
    if (!blocked && engine::runs_as_program(doc->text(), program_run_of(settings).run))
      actions.push_back(command_action("Optimize the program (kernels ranked by what they give it, timed end to end)",
                                       "kblaster.optimizeProgram", json{{"uri", uri}}, "refactor.rewrite"));
    // Creating a task proposes an edit and runs nothing: offered whatever the trust, where no
    // task file is there yet (a broken one is fixed, not written over).
    const auto lookup = engine::find_task_for(document_path(*doc), doc->text());
    if (!lookup.task && lookup.error.empty() && !engine::runs_as_program(doc->text(), program_run_of(settings).run))
      actions.push_back(command_action("Create a task for " + name, "kblaster.createTask", args, "refactor"));
    return actions;
  });
}

}  // namespace kblaster::server
