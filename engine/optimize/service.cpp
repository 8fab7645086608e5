// The optimize use case: target, capture, set-up, loop, deferred answers, carrying back.
#include "engine/optimize/service.h"

#include "engine/analysis/file_role.h"
#include "engine/capture/capture_shapes.h"
#include "engine/llm/llm_client.h"
#include "kb/location.h"
#include "kb/sql.h"
#include "support/files.h"
#include "support/text.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace kblaster::engine::optimize {

namespace fs = std::filesystem;

namespace {

void tell(const service_events& events, const std::string& line) {
  if (events.say) events.say(line);
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec1, ec2;
  const auto ca = fs::weakly_canonical(a, ec1), cb = fs::weakly_canonical(b, ec2);
  return ec1 || ec2 ? a == b : ca == cb;
}

std::string capture_line(const capture_result& r) {
  const auto& c = r.capture;
  return "captured " + r.provenance + origin_note(r) + ": " + c.name + ", grid " + dims_text(c.grid) + " x block " +
         dims_text(c.block) + ", " + support::ms_text(c.time_ms, 4) + " in the program" + c.timing_note() + ", " +
         std::to_string(c.total_bytes()) + " bytes of memory";
}

// A program's kernel becomes the run's task: its launch captured at every shape it runs with.
void capture_target(const optimize_request& request, const std::string& text, optimize_outcome& out,
                    const service_events& events, std::stop_token stop) {
  const std::string name = fs::path(request.file).filename().string();
  if (request.kernel.empty())
    throw optimize_refusal(optimize_refusal_kind::needs_kernel, name + " is a program (it defines main): name the kernel to optimize");
  if (request.buffer && support::read_file_if_exists(request.file).value_or("") != text)
    throw optimize_refusal(optimize_refusal_kind::not_saved,
                           "save " + name + " first: its program is built and run from the file on disk");
  capture_request capture = request.program;
  capture.source = request.file;
  capture.kernel = request.kernel;
  const auto say = [&](const std::string& line) { tell(events, line); };
  try {
    out.captured = capture_program(capture, say, stop);
    out.shapes = capture_shapes(capture, *out.captured, say, stop);
    out.task = load_task(out.captured->task.dir);
  } catch (const capture_error& e) {
    throw optimize_refusal(optimize_refusal_kind::capture_failed, "capturing " + request.kernel + ": " + e.what());
  } catch (const task_error& e) {
    throw optimize_refusal(optimize_refusal_kind::capture_failed, std::string("the capture's task: ") + e.what());
  }
  tell(events, capture_line(*out.captured));
  for (const auto& s : out.shapes) tell(events, capture_line(s) + "; every candidate is verified on it too");
  if (!out.shapes.empty())
    tell(events, "every candidate is verified on all " + std::to_string(out.shapes.size() + 1) + " captured shapes");
  // What the verification will do differently (a widened tolerance, hidden pointers, ...).
  for (const auto& n : out.captured->task.notes) tell(events, "note: " + n);
}

fs::path run_folder_of(const optimize_request& request, const optimize_outcome& out, const std::string& input_text,
                       const evaluator& eval, const std::string& model_note) {
  if (!request.out_dir.empty()) return request.out_dir;
  // Runs live beside the task, or beside the program (its capture's task is in a cache).
  const fs::path beside = out.is_program() ? fs::absolute(request.file).parent_path() : fs::path(out.task.dir);
  const fs::path base = request.runs_base.empty() ? beside / ".kblaster" / "runs" : request.runs_base;
  if (!request.keyed_run_folder)
    return base / (out.is_program() ? fs::path(request.file).stem().string() + "-" + request.kernel : out.task.name);
  const auto& l = request.loop;
  const std::string key = input_text + "\n" +
                          nlohmann::json({l.breadth, l.depth, l.iterations, l.top_k, l.policy, l.seed, l.only_technique,
                                          model_note, eval.describe()})
                              .dump();
  return run_folder(base, out.task.name, key, request.run_prefix);
}

// The loop, and for a deferred model the rounds after it: hand the questions over, and when
// asked, wait for the answers and resume (the journal keeps everything done).
optimize_result run_loop(const optimize_request& request, optimize_outcome& out, run_environment& env,
                         optimize_session& session, const service_events& events) {
  try {
    optimize_result r;
    session.run_rounds(
        {request.wait_for_model, request.poll_seconds}, env.stop,
        [&] {
          r = run_optimization(out.task, request.loop, env);
          return r.stop_reason == stop_kind::waiting;
        },
        [&](const llm::hand_over_report& handed) {
          out.waiting_for = handed.description;
          tell(events, "waiting for the model: " + out.waiting_for +
                           (request.wait_for_model ? "; looking for the answers every " + support::seconds_text(request.poll_seconds)
                                                   : "; then ask again: the run resumes where it stopped"));
        },
        [&] { tell(events, "answers arrived in the batch folder: resuming"); });
    return r;
  } catch (const std::invalid_argument& e) {
    throw optimize_refusal(optimize_refusal_kind::bad_option, e.what());
  } catch (const evaluation_error& e) {
    throw optimize_refusal(optimize_refusal_kind::evaluator, e.what());
  } catch (const llm::llm_error& e) {
    throw optimize_refusal(optimize_refusal_kind::model, std::string("model: ") + e.what());
  }
}

// The best version back in the user's program: built, run and re-captured before it is written.
void carry_back(const optimize_request& request, optimize_outcome& out, const std::string& program_text,
                const service_events& events, std::stop_token stop) {
  capture_request capture = request.program;
  capture.source = request.file;
  capture.kernel = request.kernel;
  tell(events, "checking the rewrite in your program: build, run, capture again");
  try {
    out.rewrite = rewrite_program(capture, *out.captured, out.shapes, program_text, out.result.best_source, out.out_dir.string(),
                                  [&](const std::string& line) { tell(events, line); }, stop);
  } catch (const capture_error& e) {
    out.rewrite_error = e.what();
    return;
  }
  if (!request.apply || out.rewrite->check != rewrite_check::reproduced) return;
  const fs::path source = fs::absolute(request.file);
  out.applied_backup = out.out_dir / (source.filename().string() + ".orig");
  support::write_file_atomically(out.applied_backup, program_text);
  support::write_file_atomically(source, out.rewrite->edit.edited);
  out.applied_to = source;
}

}  // namespace

optimize_outcome optimize_file(const optimize_request& request, const service_events& events, std::stop_token stop) {
  optimize_outcome out;
  const std::string text = request.buffer.value_or(support::read_file_if_exists(request.file).value_or(""));
  const auto role = role_of(request.file, text, request.program.run).for_kernel(request.kernel);
  if (role.is_program()) {
    capture_target(request, text, out, events, stop);
  } else if (role.is_task()) {
    out.task = *role.task.task;
  } else {
    const auto kind = role.task.error.empty() ? optimize_refusal_kind::not_optimizable : optimize_refusal_kind::unreadable_task;
    throw optimize_refusal(kind, fs::path(request.file).filename().string() + ": " + role.why_neither());
  }

  auto settings = request.evaluator;
  if (!settings.on_device_wait) settings.on_device_wait = [&events](const std::string& line) { tell(events, line); };
  std::vector<task_spec> tasks{out.task};
  try {
    for (const auto& s : out.shapes) tasks.push_back(load_task(s.task.dir));
  } catch (const std::exception& e) {
    throw optimize_refusal(optimize_refusal_kind::no_evaluator, std::string("cannot evaluate candidates: ") + e.what(), e.what());
  }
  optimize_session session(settings, request.model, std::move(tasks));
  const auto& model = session.model();
  out.replayed = session.evaluators()->replayed();
  out.model_note = model.note;

  run_environment env;
  env.eval = &session.evaluators()->top();
  // A program captured at several shapes: every candidate is verified on each of them.
  std::optional<shape_checking_evaluator> shape_checked;
  if (out.is_program() && !out.shapes.empty()) {
    shape_checked.emplace(*env.eval, shape_check_of(*out.captured, out.shapes));
    env.eval = &*shape_checked;
  }
  out.evaluator_note = env.eval->describe();
  env.model = model.client.get();
  env.kb_path = request.kb_path.empty() ? kb::default_kb_path() : request.kb_path;
  const std::string input_text =
      !request.start_from.empty() ? support::read_file_if_exists(request.start_from).value_or(request.start_from) : text;
  out.out_dir = env.out_dir = run_folder_of(request, out, input_text, *env.eval, model.note);
  if (!request.start_from.empty()) {
    env.input = request.start_from;
  } else if (!out.is_program() && request.buffer && same_file(out.task.kernel, request.file) &&
             support::read_file_if_exists(out.task.kernel).value_or("") != *request.buffer) {
    // The buffer is what the user sees: unsaved edits are a snapshot the run starts from.
    env.input = env.out_dir / ("editor-input" + fs::path(out.task.kernel).extension().string());
    support::write_file_atomically(env.input, *request.buffer);
  }
  env.progress = events.progress;
  env.stop = stop;
  tell(events, out.task.name + ": " + model.note);
  tell(events, "evaluator: " + out.evaluator_note);
  tell(events, "KB " + kb::sql::redact(env.kb_path.string()) + ", run directory " + env.out_dir.string());

  out.result = run_loop(request, out, env, session, events);
  const auto& why = out.result.stop_reason;
  const bool ended = why != stop_kind::error && why != stop_kind::waiting && why != stop_kind::cancelled;
  if (out.is_program() && out.improved() && ended && !stop.stop_requested() &&
      (!events.input_unchanged || events.input_unchanged()))
    carry_back(request, out, text, events, stop);
  return out;
}

optimize_session::optimize_session(const std::optional<evaluator_settings>& evaluator, const model_settings& model,
                                   std::vector<task_spec> tasks) {
  if (evaluator) try {
      evaluators_ = std::make_unique<evaluator_stack>(*evaluator, std::move(tasks));
    } catch (const no_gpu_error& e) {
      throw optimize_refusal(optimize_refusal_kind::no_gpu, e.what());
    } catch (const std::exception& e) {
      throw optimize_refusal(optimize_refusal_kind::no_evaluator, std::string("cannot evaluate candidates: ") + e.what(),
                             e.what());
    }
  try {
    model_ = choose_model(model);
  } catch (const std::exception& e) {
    throw optimize_refusal(optimize_refusal_kind::model, std::string("the model cannot be used: ") + e.what(), e.what());
  }
}

optimize_result optimize_session::run(const task_spec& task, const loop_options& loop, run_environment env) {
  if (!evaluators_) throw std::logic_error("an optimize session without evaluators runs no loop");
  evaluators_->add_task(task, env.stop);
  env.eval = &evaluators_->top();
  env.model = model_.client.get();
  return run_optimization(task, loop, env);
}

std::optional<reference_probe> optimize_session::probe_reference(const task_spec& task, std::stop_token stop) {
  return evaluators_ ? evaluators_->probe_reference(task, stop) : std::nullopt;
}

void optimize_session::run_rounds(const model_rounds& rounds, std::stop_token stop, const std::function<bool()>& round,
                                  const std::function<void(const llm::hand_over_report&)>& handed_over,
                                  const std::function<void()>& resumed) {
  while (round() && model_.deferred) {
    const auto handed = model_.deferred->hand_over();
    if (handed_over) handed_over(handed);
    if (!rounds.wait || !llm::await_answers(*model_.deferred, handed, rounds.poll_seconds, stop)) return;
    if (resumed) resumed();
  }
}

std::vector<std::string> describe_rewrite(const program_rewrite& r, const capture_result& captured) {
  std::vector<std::string> lines;
  switch (r.check) {
    case rewrite_check::launch_changed: {
      std::string sites;
      for (const auto& s : r.edit.call_sites) sites += " <<<" + s + ">>>";
      lines.push_back("the rewrite also changes the launch, from <<<" + r.edit.captured_launch + ">>> to <<<" +
                      r.edit.rewritten_launch + ">>>, which cannot be carried to your call site" + sites + ": " +
                      r.launch_refusal + "; change it to match, then capture again to check");
      return lines;
    }
    case rewrite_check::differs:
      lines.push_back("the edited program does NOT reproduce the verified outputs: " + r.mismatch);
      return lines;
    case rewrite_check::reproduced:
      break;
  }
  if (r.launch_sites > 0)
    lines.push_back("the rewrite's launch <<<" + r.edit.rewritten_launch + ">>> was carried to " + std::to_string(r.launch_sites) +
                    " call site(s) of " + std::to_string(r.edit.call_sites.size()) + " in your program, in its own terms");
  const std::string times =
      support::ms_text(r.recaptured_ms, 4) + " in the program, was " + support::ms_text(captured.capture.time_ms, 4);
  lines.push_back(std::string(r.replayed ? "the edited program's recorded re-capture (replayed: nothing was built or run) "
                                           "has the same outputs ("
                                         : "the edited program builds, runs and re-captures to the same outputs (") +
                  times + ")" +
                  (r.shapes_reproduced > 1 ? ", on all " + std::to_string(r.shapes_reproduced) + " captured shapes" : ""));
  return lines;
}

}  // namespace kblaster::engine::optimize
