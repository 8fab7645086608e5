// textDocument/codeAction on a kernel: "Optimize `k`", "Apply `technique`" for the KB's top
// three strategies in its state, and "Create a task for `k`" when it has none and is not in a
// program (a file with main: Optimize captures the kernel's launch from the program's own run).
// Optimize and the techniques run code: in an untrusted workspace they are disabled with the reason.
#include "engine/analysis/file_role.h"
#include "server/features/diagnostics.h"
#include "server/features/features.h"
#include "server/features/kernel_context.h"
#include "server/features/kernel_text.h"
#include "server/features/workspace_trust.h"
#include "server/lsp_server.h"

#include <cstdio>

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

namespace {

// Code actions apply to the kernel whose definition holds the cursor (or the selection's start).
const engine::cuda_symbol* kernel_at(const document_snapshot& doc, std::size_t offset) {
  for (const auto& s : doc.symbols())
    if (s.kind == engine::cuda_symbol_kind::global_kernel && s.is_definition && s.full_range.begin <= offset &&
        offset <= s.full_range.end)
      return &s;
  return engine::symbol_at(doc.symbols(), doc.text(), offset);
}

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
    const engine::cuda_symbol* kernel = kernel_at(*doc, doc->lines().offset_of(r.start));
    json actions = json::array();
    if (!kernel || kernel->kind != engine::cuda_symbol_kind::global_kernel) return actions;
    const auto settings = read_editor_settings(server.settings());
    const auto k = lookup_kernel(state, settings, *doc, kernel->name);
    const json args = {{"uri", uri}, {"kernel", kernel->name}};
    const std::string& name = kernel->name;  // titles are plain text: no Markdown backticks
    // A program (main, no task): Optimize captures the kernel's launch from its own run.
    const auto role = engine::role_of(document_path(*doc), doc->text(), program_run_of(settings).run);
    const bool has_task = role.is_task(), runnable = role.is_program();

    // Why Optimize cannot run here, empty when it can. Never silently absent: the editor shows
    // why, or offers the step that unblocks it.
    std::string why_not;
    if (!state.workspace_trusted()) why_not = untrusted_message("Optimize is off");
    else if (!has_task && !runnable)
      why_not = !role.task.error.empty() ? "the task cannot be read: " + role.task.error
                                         : "no task for this file and no main(): create a task, or set "
                                           "kblaster.run.command to the program your build makes";
    if (why_not.empty()) {
      actions.push_back(command_action("Optimize " + name, "kblaster.optimize", args, "refactor.rewrite"));
    } else if (state.code_action_disabled_support()) {
      json a = command_action("Optimize " + name, "kblaster.optimize", args, "refactor.rewrite");
      a["disabled"] = {{"reason", why_not}};
      actions.push_back(std::move(a));
    } else if (!has_task && !runnable) {
      actions.push_back(command_action("Create a task for " + name + " first", "kblaster.createTask", args, "refactor"));
    } else {
      // The command answers with the whole reason and how to trust the workspace.
      actions.push_back(command_action("Optimize " + name + " (off: workspace not trusted)", "kblaster.optimize", args,
                                       "refactor.rewrite"));
    }
    if (k.view && (state.workspace_trusted() || state.code_action_disabled_support())) {
      for (const auto& s : k.insight.strategies) {
        char predicted[32];
        std::snprintf(predicted, sizeof predicted, "%.2f", s.predicted_speedup);
        json a = args;
        a["technique"] = s.technique;
        json action = command_action("Apply " + s.technique + " (predicted " + predicted + "×)", "kblaster.applyTechnique",
                                     a, "refactor.rewrite");
        if (!state.workspace_trusted()) action["disabled"] = {{"reason", untrusted_message("Optimize is off")}};
        actions.push_back(std::move(action));
      }
    }
    if (!has_task && !runnable && state.code_action_disabled_support())
      actions.push_back(command_action("Create a task for " + name, "kblaster.createTask", args, "refactor"));
    return actions;
  });
}

}  // namespace kblaster::server
