// kblaster.optimizeProgram: the program-level Optimize (engine/program/program_optimize.h) on the
// document's program, as server-initiated progress that $/cancelRequest or the progress UI
// cancels. The plan (which kernels, in which order, the Amdahl bound) is reported before any
// kernel runs; at the end the optimized program comes back as one workspace/applyEdit, only when
// it ran faster end to end, and a diagnostic at the top of the file sums up per kernel.
#include "server/features/commands.h"
#include "support/text.h"
#include "server/features/document_edit.h"
#include "server/features/optimize_request.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include "engine/program/program_optimize.h"

#include <cstdio>
#include <mutex>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;
namespace opt = engine::optimize;

namespace {

// One sentence per kernel, then the program's: what the Problems panel shows at the top.
std::string summary_of(const engine::program_optimize_outcome& o, bool applied) {
  std::string s;
  for (const auto& t : o.turns) {
    s += t.plan.function + ": " + support::fixed_text(t.harness_speedup, 2) + "x in the harness";
    if (t.in_program_speedup) s += ", " + support::fixed_text(*t.in_program_speedup, 2) + "x in the program";
    if (t.end_to_end && t.end_to_end->ok()) s += ", program " + t.end_to_end->text();
    s += ": " + t.status + ".\n";
  }
  if (o.total && o.total->ok())
    s += "The program: " + o.total->text() + " end to end (original against optimized, whole runs).";
  else if (o.total)
    s += "The program was not measured end to end: " + o.total->text();
  else
    s += "The program is unchanged: no rewrite made it faster end to end.";
  if (o.improved()) s += applied ? " Applied." : " Not applied: the optimized program is in " + o.final_path.string() + ".";
  return s;
}

}  // namespace

json optimize_program_command(const command_args& args, request_context& ctx, editor_state& state) {
  auto& server = ctx.server();
  const auto settings = read_editor_settings(server.settings());
  const auto doc = server.documents().get(args.uri);
  if (!doc) throw rpc_error(error_code::invalid_params, "kblaster.optimizeProgram: " + args.uri + " is not open");
  engine::program_optimize_request request;
  request.base = optimize_request_of(settings, *doc, args);
  request.base.kernel.clear();
  request.profile.arch = settings.arch;
  work_done_progress progress(ctx, "KernelBlaster: optimizing the program", "profiling");
  std::mutex progress_mutex;
  opt::service_events events;
  events.say = [&](const std::string& line) { const std::lock_guard lock(progress_mutex); progress.report(line, 0); };
  events.progress = [&](const opt::progress_event& e) { const std::lock_guard lock(progress_mutex); progress.report(e.message, 0); };
  engine::program_optimize_outcome o;
  try {
    o = engine::optimize_program(request, events, ctx.stop_token());
  } catch (const opt::optimize_refusal& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimizeProgram: ") + e.what());
  }
  ctx.check_cancelled();
  const auto now = server.documents().get(args.uri);
  const bool unchanged = now && now->version() == doc->version();
  const bool faster = o.total && o.total->faster();
  progress.end(faster ? "the program " + o.total->text() : "the program is unchanged");
  const bool applied = faster && unchanged && replace_document_text(server, *doc, "KernelBlaster: the optimized program", o.final_text);
  const json diag = {{"range", protocol::range{{0, 0}, {0, 0}}}, {"severity", 3}, {"source", "kblaster"},
                     {"message", summary_of(o, applied)}};
  state.diagnostics().publish(server, args.uri, std::nullopt, diagnostics_origin::optimizer, json::array({diag}));
  json result = engine::to_json(o);
  result["applied"] = applied;
  return result;
}

}  // namespace kblaster::server
