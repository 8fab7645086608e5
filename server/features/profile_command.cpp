// kblaster.profile: analyse the document now (static, and live where possible), publish its
// diagnostics, and return what was found: with no live profile, why (liveSkipped, in words, and
// liveSkippedReason, typed: "no_gpu", "no_ncu", ...), for the client to say where the user asked.
#include "server/features/commands.h"

#include "engine/state/profile_summary.h"
#include "server/features/diagnostics.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

namespace kblaster::server {

using protocol::json;

namespace {

// The reason a client acts on (a button for ncuPath, a note that no GPU is here), beside the words.
const char* skip_name(engine::live_skip skip) {
  switch (skip) {
    case engine::live_skip::none: return "";
    case engine::live_skip::off: return "profile_on_save_off";
    case engine::live_skip::no_gpu: return "no_gpu";
    case engine::live_skip::no_ncu: return "no_ncu";
    case engine::live_skip::refused: return "untrusted";
    case engine::live_skip::does_not_compile: return "does_not_compile";
    case engine::live_skip::no_task: return "no_task";
    case engine::live_skip::not_saved: return "not_saved";
    case engine::live_skip::needs_harness: return "needs_harness";
  }
  return "";
}

}  // namespace

json profile_command(const command_args& args, request_context& ctx, editor_state& state) {
  const auto doc = ctx.server().documents().get(args.uri);
  if (!doc) throw protocol::rpc_error(protocol::error_code::invalid_params, "kblaster.profile: document " + args.uri + " is not open");
  work_done_progress progress(ctx, "KernelBlaster: profiling", "compiling");
  const auto a = analyze_and_publish(ctx.server(), state, doc, false, std::nullopt,
                                     [&](const std::string& step) { progress.report(step, 0); }, ctx.stop_token());
  ctx.check_cancelled();
  if (!a) throw protocol::rpc_error(protocol::error_code::request_cancelled, "a newer analysis of this file took over");
  json kernels = json::array();
  for (const auto* outcome : {a->live_profile ? &*a->live_profile : nullptr, &a->static_profile}) {
    if (!outcome || !kernels.empty()) continue;
    for (const auto& k : outcome->kernels) {
      if (!args.kernel.empty() && k.signature.function != args.kernel) continue;
      kernels.push_back(engine::to_json(k));
    }
  }
  progress.end(a->live_profile ? "profiled" : "compiled");
  json out = {{"kernels", kernels}, {"live", a->live_profile.has_value()}, {"analysedAt", a->analysed_at}};
  if (!a->live_skipped.empty()) out["liveSkipped"] = a->live_skipped;
  if (a->skipped != engine::live_skip::none) out["liveSkippedReason"] = skip_name(a->skipped);
  if (a->live_profile && !a->live_profile->warnings.empty()) out["warnings"] = a->live_profile->warnings;
  if (a->live_profile && !a->live_profile->not_profiled.empty()) out["notProfiled"] = a->live_profile->not_profiled;
  if (!a->static_profile.error.empty()) out["error"] = a->static_profile.error;
  if (a->task.task) out["task"] = a->task.task->name;
  return out;
}

}  // namespace kblaster::server
