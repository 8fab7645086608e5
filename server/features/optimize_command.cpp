// kblaster.optimize and kblaster.applyTechnique: the optimize service (engine/optimize/service)
// as server-initiated progress, cancelled by $/cancelRequest or the progress UI; at the end the
// best version comes back as a workspace/applyEdit (a program: the program with the rewrite in
// place, once its re-capture reproduced the verified outputs) and a diagnostic on the kernel
// says predicted vs measured speedup and where the report is. applyTechnique is one step of
// the named technique. Recordings named in kblaster.optimize.replayHarness win over a GPU.
#include "server/features/commands.h"
#include "server/features/cuda_document.h"
#include "server/features/document_edit.h"
#include "server/features/optimize_gate.h"
#include "server/features/optimize_request.h"
#include "server/features/refusal.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <filesystem>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;
namespace opt = engine::optimize;

namespace {

// The engine's refusal as the client sees it: a typed refusal (refusal.h: each client words it
// with the button that removes it) where one fits, else an error with the engine's sentence.
rpc_error error_of(const opt::optimize_refusal& e, const command_args& args, const opt::optimize_request& request) {
  const std::string command = args.technique.empty() ? "kblaster.optimize" : "kblaster.applyTechnique";
  const std::string& file = request.file;
  const auto typed = [&](refusal_kind kind, std::string detail) { return refusal{kind, command, args.kernel, args.uri, std::move(detail)}.error(); };
  switch (e.kind()) {
    case opt::optimize_refusal_kind::not_optimizable:
    case opt::optimize_refusal_kind::needs_kernel: return typed(refusal_kind::no_task, "");
    case opt::optimize_refusal_kind::unreadable_task: return typed(refusal_kind::task_unreadable, e.what());
    case opt::optimize_refusal_kind::not_saved: return typed(refusal_kind::not_saved, std::filesystem::path(file).filename().string());
    case opt::optimize_refusal_kind::no_gpu: {
      refusal r = no_gpu_refusal(command, args.kernel, args.uri);  // with the example this machine can replay
      r.detail = e.what();
      return r.error();
    }
    case opt::optimize_refusal_kind::model: {
      // The cause alone (the kind says "cannot be used"), and what its fix needs to name.
      refusal r{refusal_kind::no_model, command, args.kernel, args.uri, e.cause()};
      r.facts = model_facts(request.model);
      return r.error();
    }
    case opt::optimize_refusal_kind::capture_failed:
    case opt::optimize_refusal_kind::no_evaluator:
    case opt::optimize_refusal_kind::evaluator:
    case opt::optimize_refusal_kind::bad_option: break;
  }
  const bool settings = e.kind() == opt::optimize_refusal_kind::bad_option || e.kind() == opt::optimize_refusal_kind::no_evaluator;
  return rpc_error(settings ? error_code::invalid_params : error_code::request_failed, command + ": " + e.what());
}

}  // namespace

json optimize_command(const command_args& args, request_context& ctx, editor_state& state) {
  auto& server = ctx.server();
  const auto settings = read_editor_settings(server.settings());
  // Not watched: the run may take hours, and its own edit at the end must not cancel it.
  const auto doc = server.documents().get(args.uri);
  if (!doc) throw rpc_error(error_code::invalid_params, "kblaster.optimize: " + args.uri + " is not open");
  const auto request = optimize_request_of(settings, *doc, args);
  // A model that cannot be used is refused before any progress begins, as the gate's refusals
  // are (a batch model is left to the run: choosing it prepares its folder).
  if (request.model.replay.empty() && request.model.deferred.empty()) {
    try {
      (void)opt::choose_model(request.model);
    } catch (const std::exception& e) {
      refusal r{refusal_kind::no_model, args.technique.empty() ? "kblaster.optimize" : "kblaster.applyTechnique", args.kernel,
                args.uri, e.what()};
      r.facts = model_facts(request.model);
      throw r.error();
    }
  }
  work_done_progress progress(ctx, "KernelBlaster: optimizing " + args.kernel +
                                       (request.evaluator.replay.empty() ? "" : " (REPLAYED results)"), "");
  optimize_progress reporter(progress, "");
  auto events = reporter.events();
  const auto unchanged = [&] { const auto now = server.documents().get(args.uri); return now && now->version() == doc->version(); };
  events.input_unchanged = unchanged;
  opt::optimize_outcome o;
  try {
    o = opt::optimize_file(request, events, ctx.stop_token());
  } catch (const opt::optimize_refusal& e) {
    throw error_of(e, args, request);
  }
  ctx.check_cancelled();
  const bool edited_meanwhile = !unchanged();
  // A task's kernel: the best version itself. A program: the program with the rewrite in place.
  std::string best_text;
  if (o.improved() && !edited_meanwhile)
    best_text = !o.is_program() ? o.result.best_source
                : o.rewrite && o.rewrite->check == engine::rewrite_check::reproduced ? o.rewrite->edit.edited : "";
  progress.end(optimize_end_text(o));
  const bool applied = replace_document_text(server, *doc, "KernelBlaster: best " + args.kernel, best_text);
  // On the kernel's name in the text the user now has: the applied version's when applied.
  const document_snapshot shown(args.uri, doc->language_id(), doc->version(), applied ? best_text : doc->text());
  const auto names = kernel_name_ranges(shown);
  const auto where = names.find(args.kernel);
  const json diag = {{"range", where != names.end() ? where->second : protocol::range{}}, {"severity", 3}, {"source", "kblaster"},
                     {"message", optimize_result_message(args.kernel, o, edited_meanwhile)}};
  // No version: the applied edit made a newer one than any this request saw.
  state.diagnostics().publish(server, args.uri, std::nullopt, diagnostics_origin::optimizer, json::array({diag}));
  // "error": what stopped a run that never finished (a replay that had no recording of the
  // kernel, a harness that failed): a client says it instead of "done".
  json result = {{"bestSpeedup", o.result.best_speedup}, {"stopReason", o.result.stop_reason.to_string()},
                 {"candidates", o.result.candidates}, {"applied", applied}, {"replayed", o.replayed},
                 {"reportPath", (o.out_dir / "report.md").string()}, {"technique", args.technique},
                 {"message", diag.at("message")}};
  if (o.result.stop_reason == opt::stop_kind::error) result["error"] = o.result.stop_reason.error;
  if (const auto gpu = recorded_gpu(o); !gpu.empty()) result["recordedOn"] = gpu;
  return result;
}

}  // namespace kblaster::server
