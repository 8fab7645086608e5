// kblaster.optimize and kblaster.applyTechnique: the MAIC-RL loop (engine/optimize) as
// server-initiated progress with cancellation; at the end the best version comes back as a
// workspace/applyEdit and a diagnostic on the kernel says predicted vs measured speedup and
// where the report is. The evaluator is the live harness on a GPU machine, else a replay of
// recordings named in the settings; the UI says plainly when results are replayed.
// applyTechnique runs the same loop restricted to the named technique (one trajectory of depth 1).
// Recordings named in kblaster.optimize.replayHarness win over a GPU (the user asked for them).
#include "server/features/commands.h"
#include "support/files.h"

#include "engine/capture/capture_shapes.h"
#include "engine/capture/program_rewrite.h"
#include "engine/llm/cassette.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"
#include "engine/toolchain/nvcc_driver.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/optimize/optimize.h"
#include "engine/optimize/run_report.h"
#include "engine/optimize/run_setup.h"
#include "engine/evaluate/paced_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"
#include "kb/location.h"
#include "server/features/diagnostics.h"
#include "server/features/refusal.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>

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

// The editor's side of a run's set-up: its settings as the engine's configuration.
opt::evaluator_settings evaluator_settings_of(const editor_settings& s) {
  opt::evaluator_settings e;
  if (!s.replay_harness.empty()) e.replay = {s.replay_harness};
  e.replay_pace = s.replay_pace;
  e.harness = s.harness;
  e.ncu = s.ncu_path;
  return e;
}

opt::model_settings model_settings_of(const editor_settings& s) {
  opt::model_settings m;
  m.replay = s.llm_replay;
  if (!s.llm_provider.empty()) m.editor.values["provider"] = s.llm_provider;
  if (!s.llm_endpoint.empty()) m.editor.values["base_url"] = s.llm_endpoint;
  if (!s.llm_model.empty()) m.editor.values["model"] = s.llm_model;
  if (!s.llm_key_env.empty()) m.editor.values["key_env"] = s.llm_key_env;
  m.budget_tokens = s.budget_tokens;
  return m;
}

// The result as the Problems panel shows it: the measured speedup first, then what the KB
// predicted for the step that produced it, then anything that did not go as planned.
std::string result_message(const std::string& kernel, const opt::optimize_result& r, bool replayed, bool edited_meanwhile,
                           const fs::path& out_dir, const std::string& report_path) {
  char buf[64];
  std::string m = replayed ? "[REPLAYED] " : "";
  if (r.best_source == r.input_source || r.best_speedup <= 1.0) {
    m += "optimized " + kernel + ": no faster version found (" + std::to_string(r.candidates) + " candidates measured)";
  } else {
    std::snprintf(buf, sizeof buf, "%.2fx", r.best_speedup);
    m += "optimized " + kernel + ": " + buf + " faster, measured";
    if (const auto& step = r.best_step) {
      m += " (" + step->technique;
      if (step->predicted_speedup) {
        std::snprintf(buf, sizeof buf, "%.2fx", *step->predicted_speedup);
        m += std::string(": predicted ") + buf;
      }
      if (step->measured_speedup) {
        std::snprintf(buf, sizeof buf, "%.2fx", *step->measured_speedup);
        m += std::string(", measured ") + buf;
      }
      if (!step->state.empty()) m += ", from state " + step->state;
      m += ")";
    }
  }
  if (const auto why = opt::describe_stop(r.stop_reason); !why.empty()) m += "; stopped early: " + why;
  if (edited_meanwhile && r.best_source != r.input_source)
    m += "; not applied: the file changed during the run (the best version is " + (out_dir / "best.cu").string() + ")";
  return m + ". Report: " + report_path;
}

}  // namespace

// The task of the document the command names; a refusal (refusal.h) otherwise.
engine::task_spec task_of_document(const document_snapshot& doc, const std::string& uri) {
  const auto found = engine::find_task_for(document_path(doc), doc.text());
  if (!found.task)
    refuse({found.error.empty() ? refusal_kind::no_task : refusal_kind::task_unreadable, "kblaster.optimize", "", uri, found.error});
  return *found.task;
}

// The evaluators and the model the settings ask for; what cannot be had is a refusal or an InvalidParams error.
std::pair<std::unique_ptr<opt::evaluator_stack>, opt::model_choice> run_setup_of(const editor_settings& settings,
                                                                                 const engine::task_spec& task) {
  std::unique_ptr<opt::evaluator_stack> evaluators;
  try {
    evaluators = std::make_unique<opt::evaluator_stack>(evaluator_settings_of(settings), std::vector<engine::task_spec>{task});
  } catch (const opt::no_gpu_error& e) {
    refuse({refusal_kind::no_gpu, "kblaster.optimize", "", "", e.what()});
  } catch (const opt::evaluation_error& e) {
    throw rpc_error(error_code::invalid_params, std::string("kblaster.optimize: cannot evaluate candidates: ") + e.what());
  }
  try {
    return {std::move(evaluators), opt::choose_model(model_settings_of(settings))};
  } catch (const std::exception& e) {
    refuse({refusal_kind::no_model, "kblaster.optimize", "", "", e.what()});
  }
}

// The loop's shape and budgets from the settings; "Apply technique" is one step of one technique.
opt::loop_options loop_options_of(const editor_settings& settings, const std::string& technique) {
  opt::loop_options loop;
  loop.breadth = technique.empty() ? settings.breadth : 1;
  loop.depth = technique.empty() ? settings.depth : 1;
  loop.iterations = technique.empty() ? settings.iterations : 1;
  loop.limits.tokens = settings.budget_tokens;
  loop.limits.gpu_seconds = settings.budget_gpu_seconds;
  loop.limits.wall_seconds = settings.budget_wall_seconds;
  loop.limits.candidates = settings.budget_candidates;
  loop.arch = settings.arch;
  loop.top_k = settings.top_k;
  loop.policy = settings.policy;
  loop.seed = static_cast<std::uint64_t>(settings.seed);
  loop.only_technique = technique;
  return loop;
}

// The first thing the notification says: where the numbers come from, in a few words (the
// report has the details).
std::string provenance_line(const editor_settings& settings, bool replayed, const opt::model_choice& model) {
  const std::string where_measured =
      replayed ? "GPU results replayed from " + fs::path(settings.replay_harness).filename().string() + " (no GPU is used)"
               : "measuring on this machine's GPU";
  const std::string which_model = !settings.llm_replay.empty()
                                      ? "model answers replayed from " + fs::path(settings.llm_replay).filename().string()
                                      : model.client ? model.note : "no model: the mechanical tier only";
  return where_measured + "; " + which_model;
}

// Runs the loop, translating its failures into JSON-RPC errors.
opt::optimize_result run_loop(const engine::task_spec& task, const opt::loop_options& loop, opt::run_environment& env) {
  try {
    return opt::run_optimization(task, loop, env);
  } catch (const std::invalid_argument& e) {
    throw rpc_error(error_code::invalid_params, std::string("kblaster.optimize: ") + e.what());
  } catch (const opt::evaluation_error& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: ") + e.what());
  } catch (const llm::llm_error& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: model: ") + e.what());
  }
}

// Replaces the document's text with the best version, unless the user edited it during the run
// (the result then stays in the run folder). True when the client applied the edit.
bool apply_best(lsp_server& server, const document_snapshot& doc, const std::string& kernel, const std::string& best) {
  if (best.empty() || best == doc.text()) return false;
  const auto end = doc.lines().position_of(doc.text().size());
  const json edit = {{"changes", {{doc.uri(), json::array({{{"range", protocol::range{{0, 0}, end}}, {"newText", best}}})}}}};
  const auto answer = server.call_client("workspace/applyEdit", {{"label", "KernelBlaster: best " + kernel}, {"edit", edit}},
                                         apply_timeout);
  return answer && answer->is_object() && answer->value("applied", false);
}

// The capture of a program's kernel (a .cu with main and no task): how it was run, and what
// it recorded, which is the run's task.
struct program_capture {
  engine::capture_request request;
  engine::capture_result captured;
  std::vector<engine::capture_result> shapes;  // run.shapes: more runs every candidate must verify on
};

// Builds and runs the document's program as the run.* settings say, capturing the kernel's launch.
program_capture capture_document(const document_snapshot& doc, const std::string& kernel, const editor_settings& settings,
                                 work_done_progress& progress, std::stop_token stop) {
  program_capture p;
  p.request = program_run_of(settings);
  p.request.source = document_path(doc);
  p.request.kernel = kernel;
  if (support::read_file_if_exists(p.request.source).value_or("") != doc.text())
    throw rpc_error(error_code::invalid_params, "kblaster.optimize: save " + fs::path(p.request.source).filename().string() +
                                                    " first: its program is built and run from the file on disk");
  try {
    const auto report = [&](const std::string& line) { progress.report(line, 0); };
    p.captured = engine::capture_program(p.request, report, stop);
    p.shapes = engine::capture_shapes(p.request, p.captured, report, stop);
  } catch (const engine::capture_error& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: capturing ") + kernel + ": " + e.what());
  }
  return p;
}

json optimize_command(const command_args& args, request_context& ctx, editor_state& state) {
  auto& server = ctx.server();
  const auto settings = read_editor_settings(server.settings());
  // Not watched: the run may take hours, and its own edit at the end must not cancel it. An
  // edit made meanwhile is noticed before applying (the result then stays in the run folder).
  const auto doc = server.documents().get(args.uri);
  if (!doc) throw rpc_error(error_code::invalid_params, "kblaster.optimize: " + args.uri + " is not open");
  // The request's cancellation (client or progress UI) stops the capture, the loop and the
  // rewrite's check, killing the child each has in flight.
  const std::stop_token stop = ctx.stop_token();
  const bool is_program = !engine::find_task_for(document_path(*doc), doc->text()).task &&
                          engine::runs_as_program(doc->text(), program_run_of(settings).run);
  const bool replay_asked = !settings.replay_harness.empty();
  work_done_progress progress(ctx, "KernelBlaster: optimizing " + args.kernel + (replay_asked ? " (REPLAYED results)" : ""),
                              is_program ? "building and running your program to capture " + args.kernel : "");
  std::optional<program_capture> program;
  engine::task_spec task;
  if (is_program) {
    program = capture_document(*doc, args.kernel, settings, progress, stop);
    ctx.check_cancelled();
    try {
      task = engine::load_task(program->captured.task.dir);
    } catch (const engine::task_error& e) {
      throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: the capture's task: ") + e.what());
    }
    progress.report("captured " + program->captured.provenance + engine::origin_note(program->captured), 0);
    for (const auto& n : program->captured.task.notes) progress.report("note: " + n, 0);
    for (const auto& shape : program->shapes)
      progress.report("captured " + shape.provenance + engine::origin_note(shape) + ": grid " + engine::dims_text(shape.capture.grid) +
                          " x block " + engine::dims_text(shape.capture.block) + "; every candidate is verified on it too",
                      0);
  } else {
    task = task_of_document(*doc, args.uri);
  }
  const auto [evaluators, model] = run_setup_of(settings, task);
  const bool replayed = evaluators->replayed();
  const auto loop = loop_options_of(settings, args.technique);
  progress.report(provenance_line(settings, replayed, model), 0);
  opt::run_environment env;
  env.kb_path = settings.kb_path.empty() ? kb::default_kb_path() : fs::path(settings.kb_path);
  env.eval = &evaluators->top();
  // A program captured at several shapes (run.shapes): every candidate is verified on each.
  std::optional<engine::shape_checking_evaluator> shape_checked;
  if (program && !program->shapes.empty()) {
    try {
      for (const auto& shape : program->shapes) evaluators->add_task(engine::load_task(shape.task.dir));
    } catch (const engine::task_error& e) {
      throw rpc_error(error_code::request_failed, std::string("kblaster.optimize: another shape's task: ") + e.what());
    }
    shape_checked.emplace(*env.eval, engine::shape_check_of(program->captured, program->shapes));
    env.eval = &*shape_checked;
  }
  env.model = model.client.get();
  // One run directory per (input, options): running again after a cancel resumes, and an
  // optimized kernel (a new input) or other settings start a fresh run beside the old ones.
  const std::string run_key = doc->text() + "\n" + json({loop.breadth, loop.depth, loop.iterations, loop.top_k, loop.policy,
                                                           loop.seed, loop.only_technique, model.note, env.eval->describe()}).dump();
  // Runs live beside the task, or beside the program (its capture's task is in a cache).
  const fs::path beside = program ? fs::path(document_path(*doc)).parent_path() : fs::path(task.dir);
  env.out_dir = opt::run_folder(settings.output_dir.empty() ? beside / ".kblaster" / "runs" : fs::path(settings.output_dir),
                                task.name, run_key, args.technique.empty() ? "" : args.technique + "-");
  std::mutex progress_mutex;  // trajectories report from their own threads
  env.progress = [&](const opt::progress_event& e) {
    const std::lock_guard lock(progress_mutex);
    const int pct = e.steps_total > 0 ? 100 * e.steps_done / e.steps_total : 0;
    char best[32];
    std::snprintf(best, sizeof best, "%.2fx", e.best_speedup);
    // No "best" before the input itself has been measured.
    progress.report(e.phase == "baseline" ? e.message : e.message + " (best so far " + best + ")", pct);
  };
  env.stop = stop;
  // The buffer is what the user sees: when it differs from the file on disk (unsaved edits),
  // the run starts from a snapshot of it.
  if (!program && same_file(task.kernel, document_path(*doc)) && support::read_file_if_exists(task.kernel).value_or("") != doc->text()) {
    env.input = env.out_dir / ("editor-input" + fs::path(task.kernel).extension().string());
    support::write_file_atomically(env.input, doc->text());
  }
  const auto r = run_loop(task, loop, env);
  ctx.check_cancelled();
  const std::string report_path = (env.out_dir / "report.md").string();
  char speed[96];
  std::snprintf(speed, sizeof speed, "%.2fx measured", r.best_speedup);

  const auto now = server.documents().get(args.uri);
  const bool edited_meanwhile = !now || now->version() != doc->version();
  const bool improved = r.best_source != r.input_source && !r.best_source.empty();
  // What replaces the document: the best version itself for a task's kernel; for a program, the
  // program with the rewrite in place, and only once its re-capture reproduces the outputs.
  std::string best_text = improved && !edited_meanwhile && !program ? r.best_source : "";
  std::string program_note;
  if (program && improved && !edited_meanwhile) {
    try {
      progress.report("checking the rewrite in your program: build, run, capture again", 100);
      const auto rw = engine::rewrite_program(program->request, program->captured, program->shapes, doc->text(), r.best_source,
                                              env.out_dir.string(), [&](const std::string& line) { progress.report(line, 100); },
                                              stop);
      if (rw.check == engine::rewrite_check::reproduced) {
        best_text = rw.edit.edited;
        program_note = std::string("; your program re-captured with the rewrite reproduces the verified outputs") +
                       (rw.shapes_reproduced > 1 ? " on all " + std::to_string(rw.shapes_reproduced) + " captured shapes" : "") +
                       (rw.replayed ? " (a recorded re-capture, replayed: nothing was built or run)" : "");
        if (rw.launch_sites > 0)
          program_note += "; the launch changes too, at " + std::to_string(rw.launch_sites) + " call site(s): <<<" +
                          rw.edit.rewritten_launch + ">>> in your program's terms";
      } else if (rw.check == engine::rewrite_check::launch_changed) {
        program_note = "; not applied: the rewrite also changes the launch to <<<" + rw.edit.rewritten_launch +
                       ">>>, which cannot be carried to your call site: " + rw.launch_refusal + " (the program with the rewrite is " +
                       rw.edited_path + ")";
      } else {
        program_note = "; not applied: your program with the rewrite does not reproduce the verified outputs (" + rw.mismatch + ")";
      }
    } catch (const engine::capture_error& e) {
      program_note = std::string("; not applied: ") + e.what();
    }
  }
  progress.end(std::string(speed) + (replayed ? " (replayed)" : ""));
  const bool applied = apply_best(server, *doc, args.kernel, best_text);
  // On the kernel's name in the text the user now has: the applied version's when applied.
  const document_snapshot shown(args.uri, doc->language_id(), doc->version(), applied ? best_text : doc->text());
  const auto names = kernel_name_ranges(shown);
  const auto where = names.find(args.kernel);
  json diag = {{"range", where != names.end() ? where->second : protocol::range{}},
               {"severity", 3},
               {"source", "kblaster"},
               {"message", result_message(args.kernel, r, replayed, edited_meanwhile, env.out_dir, report_path) + program_note}};
  // No version: the applied edit made a newer one than any this request saw.
  state.diagnostics().publish(server, args.uri, std::nullopt, diagnostics_origin::optimizer, json::array({diag}));
  return {{"bestSpeedup", r.best_speedup}, {"stopReason", r.stop_reason.to_string()}, {"candidates", r.candidates},
          {"applied", applied}, {"replayed", replayed}, {"reportPath", report_path}, {"technique", args.technique}};
}

}  // namespace kblaster::server
