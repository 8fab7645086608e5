// kblaster.optimize and kblaster.applyTechnique: the MAIC-RL loop (engine/optimize) as
// server-initiated progress with cancellation; at the end the best version comes back as a
// workspace/applyEdit and a diagnostic on the kernel says predicted vs measured speedup and
// where the report is. The evaluator is the live harness on a GPU machine, else a replay of
// recordings named in the settings; the UI says plainly when results are replayed.
// applyTechnique runs the same loop (one trajectory of depth 1); restricting it to the named
// technique needs an option the loop does not have yet: the technique is reported, not forced.
#include "server/features/commands.h"

#include "engine/llm/cassette.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"
#include "engine/nvcc_driver.h"
#include "engine/optimize/harness_evaluator.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/recorded_evaluator.h"
#include "kb/location.h"
#include "server/features/diagnostics.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <cstdio>
#include <filesystem>
#include <thread>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;
namespace fs = std::filesystem;
namespace opt = engine::optimize;
namespace llm = engine::llm;

namespace {

constexpr std::chrono::seconds apply_timeout{60};

std::unique_ptr<llm::llm_client> make_model(const editor_settings& s, std::string& note) {
  if (!s.llm_replay.empty()) {
    auto entries = llm::read_cassette(s.llm_replay);
    bool any_match = false;
    for (const auto& e : entries) any_match = any_match || !e.match.empty();
    note = "model: REPLAYED from " + s.llm_replay;
    return std::make_unique<llm::llm_client>(
        std::make_unique<llm::replay_backend>(std::move(entries), any_match ? llm::replay_mode::by_content : llm::replay_mode::in_order,
                                              s.llm_replay),
        llm::client_options{});
  }
  if (s.llm_model.empty()) {
    note = "no model configured (kblaster.llm.model): mechanical tier only";
    return nullptr;
  }
  llm::config_layer editor;
  if (!s.llm_provider.empty()) editor.values["provider"] = s.llm_provider;
  if (!s.llm_endpoint.empty()) editor.values["base_url"] = s.llm_endpoint;
  editor.values["model"] = s.llm_model;
  if (!s.llm_key_env.empty()) editor.values["key_env"] = s.llm_key_env;
  const auto config = llm::resolve_config(llm::read_config_file(llm::default_config_file()), editor,
                                          llm::process_environment(), {});
  auto client = llm::make_http_client(config, llm::process_environment());
  note = "model: " + client->backend().describe();
  return client;
}

}  // namespace

json optimize_command(const command_args& args, request_context& ctx, editor_state& state) {
  auto& server = ctx.server();
  const auto settings = read_editor_settings(server.settings());
  const auto doc = ctx.watch_document(args.uri);
  const auto a = state.analyzer(settings).latest(document_path(*doc));
  const auto task_of = engine::find_task_for(document_path(*doc), doc->text());
  if (!task_of.task)
    throw rpc_error(error_code::invalid_params, "kblaster.optimize: no task for " + args.uri +
                                                    (task_of.error.empty() ? ": create one first (kblaster.createTask)" : ": " + task_of.error));
  const auto& task = *task_of.task;

  std::unique_ptr<opt::evaluator> eval;
  bool replayed = false;
  if (!engine::detect_local_arch().empty()) {
    eval = std::make_unique<opt::harness_evaluator>(std::vector<engine::task_spec>{task}, opt::harness_evaluator_options{});
  } else if (!settings.replay_harness.empty()) {
    eval = std::make_unique<opt::replay_evaluator>(std::vector<fs::path>{settings.replay_harness});
    replayed = true;
  } else {
    throw rpc_error(error_code::invalid_params, "kblaster.optimize: no GPU here and no recordings to replay "
                                                "(set kblaster.optimize.replayHarness)");
  }
  std::string model_note;
  auto model = make_model(settings, model_note);

  opt::loop_options loop;
  loop.breadth = args.technique.empty() ? settings.breadth : 1;
  loop.depth = args.technique.empty() ? settings.depth : 1;
  loop.iterations = args.technique.empty() ? settings.iterations : 1;
  loop.limits.tokens = settings.budget_tokens;
  loop.limits.gpu_seconds = settings.budget_gpu_seconds;
  loop.limits.wall_seconds = settings.budget_wall_seconds;
  loop.limits.candidates = settings.budget_candidates;
  loop.arch = settings.arch;

  const std::string title = "KernelBlaster: optimizing " + args.kernel + (replayed ? " (REPLAYED results)" : "");
  work_done_progress progress(ctx, title, eval->describe() + "; " + model_note);
  opt::run_environment env;
  env.kb_path = settings.kb_path.empty() ? kb::default_kb_path() : fs::path(settings.kb_path);
  env.eval = eval.get();
  env.model = model.get();
  env.out_dir = settings.output_dir.empty() ? fs::path(task.dir) / ".kblaster" / "runs" / task.name
                                            : fs::path(settings.output_dir) / task.name;
  env.progress = [&](const opt::progress_event& e) {
    const int pct = e.steps_total > 0 ? 100 * e.steps_done / e.steps_total : 0;
    char best[32];
    std::snprintf(best, sizeof best, "%.2fx", e.best_speedup);
    progress.report(e.message + " (best " + best + ")", pct);
  };
  std::stop_source stop;
  env.stop = stop.get_token();
  // The request's cancellation (client or progress UI) stops the loop between candidates.
  std::jthread watcher([&](std::stop_token st) {
    while (!st.stop_requested() && !ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (ctx.cancelled()) stop.request_stop();
  });
  const auto r = opt::run_optimization(task, loop, env);
  watcher.request_stop();
  ctx.check_cancelled();
  const std::string report_path = (env.out_dir / "report.md").string();
  char speed[96];
  std::snprintf(speed, sizeof speed, "%.2fx measured", r.best_speedup);
  progress.end(std::string(speed) + (replayed ? " (replayed)" : ""));

  bool applied = false;
  if (r.best_source != r.input_source && !r.best_source.empty()) {
    const auto end = doc->lines().position_of(doc->text().size());
    const json edit = {{"changes", {{args.uri, json::array({{{"range", protocol::range{{0, 0}, end}}, {"newText", r.best_source}}})}}}};
    const auto answer = server.call_client("workspace/applyEdit", {{"label", "KernelBlaster: best " + args.kernel}, {"edit", edit}}, apply_timeout);
    applied = answer && answer->value("applied", false);
  }
  const auto names = kernel_name_ranges(*doc);
  const auto where = names.find(args.kernel);
  std::string message = std::string(replayed ? "[REPLAYED] " : "") + "optimized " + args.kernel + ": " + speed;
  if (a) message += " (stop: " + r.stop_reason + ")";
  message += "; report: " + report_path;
  json diag = {{"range", where != names.end() ? where->second : protocol::range{}}, {"severity", 3}, {"source", "kblaster"}, {"message", message}};
  server.notify("textDocument/publishDiagnostics", {{"uri", args.uri}, {"diagnostics", json::array({diag})}});
  return {{"bestSpeedup", r.best_speedup}, {"stopReason", r.stop_reason}, {"candidates", r.candidates},
          {"applied", applied}, {"replayed", replayed}, {"reportPath", report_path}, {"technique", args.technique}};
}

}  // namespace kblaster::server
