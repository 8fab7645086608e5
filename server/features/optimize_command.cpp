// kblaster.optimize and kblaster.applyTechnique: the MAIC-RL loop (engine/optimize) as
// server-initiated progress with cancellation; at the end the best version comes back as a
// workspace/applyEdit and a diagnostic on the kernel says predicted vs measured speedup and
// where the report is. The evaluator is the live harness on a GPU machine, else a replay of
// recordings named in the settings; the UI says plainly when results are replayed.
// applyTechnique runs the same loop restricted to the named technique (one trajectory of depth 1).
// Recordings named in kblaster.optimize.replayHarness win over a GPU (the user asked for them).
#include "server/features/commands.h"
#include "support/files.h"

#include "engine/llm/cassette.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"
#include "engine/nvcc_driver.h"
#include "engine/optimize/harness_evaluator.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/paced_evaluator.h"
#include "engine/optimize/recorded_evaluator.h"
#include "kb/location.h"
#include "server/features/diagnostics.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
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

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec1, ec2;
  const auto ca = fs::weakly_canonical(a, ec1), cb = fs::weakly_canonical(b, ec2);
  return ec1 || ec2 ? a == b : ca == cb;
}

std::unique_ptr<llm::llm_client> make_model(const editor_settings& s, std::string& note) {
  if (!s.llm_replay.empty()) {
    note = "model: REPLAYED from " + s.llm_replay;
    llm::client_options co;
    co.budget_tokens = s.budget_tokens;
    return llm::make_replay_client(s.llm_replay, co);
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
  // Not watched: the run may take hours, and its own edit at the end must not cancel it. An
  // edit made meanwhile is noticed before applying (the result then stays in the run folder).
  const auto doc = server.documents().get(args.uri);
  if (!doc) throw rpc_error(error_code::invalid_params, "kblaster.optimize: " + args.uri + " is not open");
  const auto task_of = engine::find_task_for(document_path(*doc), doc->text());
  if (!task_of.task)
    throw rpc_error(error_code::invalid_params, "kblaster.optimize: no task for " + args.uri +
                                                    (task_of.error.empty() ? ": create one first (kblaster.createTask)" : ": " + task_of.error));
  const auto& task = *task_of.task;

  std::unique_ptr<opt::evaluator> replay, eval;  // eval may wrap replay: declared after it
  bool replayed = false;
  try {
    if (!settings.replay_harness.empty()) {
      replay = std::make_unique<opt::replay_evaluator>(std::vector<fs::path>{settings.replay_harness});
      // Paced: the run unfolds at (a fraction of) the recorded GPU time, as a live one would.
      if (settings.replay_pace > 0) eval = std::make_unique<opt::paced_evaluator>(*replay, settings.replay_pace);
      else eval = std::move(replay);
      replayed = true;
    } else if (!engine::detect_local_arch().empty()) {
      opt::harness_evaluator_options ho;
      ho.harness = settings.harness;
      ho.ncu = settings.ncu_path;
      eval = std::make_unique<opt::harness_evaluator>(std::vector<engine::task_spec>{task}, ho);
    } else {
      throw rpc_error(error_code::invalid_params, "kblaster.optimize: no GPU here and no recordings to replay "
                                                  "(set kblaster.optimize.replayHarness)");
    }
  } catch (const opt::evaluation_error& e) {
    throw rpc_error(error_code::invalid_params, std::string("kblaster.optimize: cannot evaluate candidates: ") + e.what());
  }
  std::string model_note;
  std::unique_ptr<llm::llm_client> model;
  try {
    model = make_model(settings, model_note);
  } catch (const std::exception& e) {
    throw rpc_error(error_code::invalid_params, std::string("kblaster.optimize: the model cannot be used: ") + e.what());
  }

  opt::loop_options loop;
  loop.breadth = args.technique.empty() ? settings.breadth : 1;
  loop.depth = args.technique.empty() ? settings.depth : 1;
  loop.iterations = args.technique.empty() ? settings.iterations : 1;
  loop.limits.tokens = settings.budget_tokens;
  loop.limits.gpu_seconds = settings.budget_gpu_seconds;
  loop.limits.wall_seconds = settings.budget_wall_seconds;
  loop.limits.candidates = settings.budget_candidates;
  loop.arch = settings.arch;
  loop.top_k = settings.top_k;
  loop.policy = settings.policy;
  loop.seed = static_cast<std::uint64_t>(settings.seed);
  loop.only_technique = args.technique;

  const std::string title = "KernelBlaster: optimizing " + args.kernel + (replayed ? " (REPLAYED results)" : "");
  work_done_progress progress(ctx, title, eval->describe() + "; " + model_note);
  opt::run_environment env;
  env.kb_path = settings.kb_path.empty() ? kb::default_kb_path() : fs::path(settings.kb_path);
  env.eval = eval.get();
  env.model = model.get();
  // One run directory per (input, options): running again after a cancel resumes, and an
  // optimized kernel (a new input) or other settings start a fresh run beside the old ones.
  const std::string run_key = doc->text() + "\n" + json({loop.breadth, loop.depth, loop.iterations, loop.top_k, loop.policy,
                                                           loop.seed, loop.only_technique, model_note, eval->describe()}).dump();
  std::string run_name = args.technique.empty() ? "" : args.technique + "-";
  for (char& c : run_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  run_name += opt::source_hash(task.name, run_key).substr(0, 12);
  env.out_dir = (settings.output_dir.empty() ? fs::path(task.dir) / ".kblaster" / "runs" : fs::path(settings.output_dir)) /
                task.name / run_name;
  std::mutex progress_mutex;  // trajectories report from their own threads
  env.progress = [&](const opt::progress_event& e) {
    const std::lock_guard lock(progress_mutex);
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
  // The buffer is what the user sees: when it differs from the file on disk (unsaved edits),
  // the run starts from a snapshot of it.
  if (same_file(task.kernel, document_path(*doc)) && support::read_file_if_exists(task.kernel).value_or("") != doc->text()) {
    fs::create_directories(env.out_dir);
    env.input = env.out_dir / ("editor-input" + fs::path(task.kernel).extension().string());
    std::ofstream(env.input, std::ios::binary) << doc->text();
  }
  opt::optimize_result r;
  try {
    r = opt::run_optimization(task, loop, env);
  } catch (const std::invalid_argument& e) {
    throw rpc_error(error_code::invalid_params, std::string("kblaster.optimize: ") + e.what());
  } catch (const opt::evaluation_error& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: ") + e.what());
  } catch (const llm::llm_error& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: model: ") + e.what());
  }
  watcher.request_stop();
  ctx.check_cancelled();
  const std::string report_path = (env.out_dir / "report.md").string();
  char speed[96];
  std::snprintf(speed, sizeof speed, "%.2fx measured", r.best_speedup);
  progress.end(std::string(speed) + (replayed ? " (replayed)" : ""));

  bool applied = false;
  const auto now = server.documents().get(args.uri);
  const bool edited_meanwhile = !now || now->version() != doc->version();
  if (r.best_source != r.input_source && !r.best_source.empty() && !edited_meanwhile) {
    const auto end = doc->lines().position_of(doc->text().size());
    const json edit = {{"changes", {{args.uri, json::array({{{"range", protocol::range{{0, 0}, end}}, {"newText", r.best_source}}})}}}};
    const auto answer = server.call_client("workspace/applyEdit", {{"label", "KernelBlaster: best " + args.kernel}, {"edit", edit}}, apply_timeout);
    applied = answer && answer->is_object() && answer->value("applied", false);
  }
  const auto names = kernel_name_ranges(*doc);
  const auto where = names.find(args.kernel);
  std::string message = std::string(replayed ? "[REPLAYED] " : "") + "optimized " + args.kernel + ": " + speed;
  message += " (stop: " + r.stop_reason + ")";
  if (edited_meanwhile && r.best_source != r.input_source)
    message += "; not applied: the file changed during the run (best version: " + (env.out_dir / "best.cu").string() + ")";
  message += "; report: " + report_path;
  json diag = {{"range", where != names.end() ? where->second : protocol::range{}}, {"severity", 3}, {"source", "kblaster"}, {"message", message}};
  // No version: the applied edit made a newer one than any this request saw.
  state.diagnostics().publish(server, args.uri, std::nullopt, diagnostics_origin::optimizer, json::array({diag}));
  return {{"bestSpeedup", r.best_speedup}, {"stopReason", r.stop_reason}, {"candidates", r.candidates},
          {"applied", applied}, {"replayed", replayed}, {"reportPath", report_path}, {"technique", args.technique}};
}

}  // namespace kblaster::server
