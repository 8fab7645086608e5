// `kblaster optimize TASK`: the MAIC-RL loop on one task, with a live progress line, Ctrl-C to
// stop (the KB stays consistent; rerunning the same command resumes from the checkpoint), and
// at the end the best kernel, its diff and the run report in --out.
#include "cli/command_registry.h"
#include "cli/command_words.h"
#include "cli/evaluator_flags.h"
#include "cli/interrupt_stop.h"
#include "cli/optimize_summary.h"
#include "engine/analysis/file_role.h"
#include "engine/llm/deferred_backend.h"
#include "engine/optimize/example_replay.h"
#include "engine/optimize/service.h"
#include "engine/program/program_optimize.h"
#include "support/text.h"

#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace {
using namespace kblaster::engine;
namespace fs = std::filesystem;

struct optimize_options {
  std::string task;
  optimize::loop_options loop;
  std::string kb;
  std::string out;
  std::string kernel;
  // model
  bool no_llm = false;
  std::string llm_config;
  llm::llm_flags llm_flags;
  std::string record, replay;
  std::string batch;          // --batch files:DIR: a model whose answers arrive later
  bool wait = false;          // --wait: poll for the answers and resume by itself
  bool cancel_batches = false;  // --cancel-batches: cancel the provider's jobs still running, then stop
  double poll_seconds = 30;
  kblaster::cli::evaluator_flags evaluator;
  bool json = false;
  bool quiet = false;
  // a program rather than a task: capture --kernel's launch first
  std::vector<std::string> program_args;
  long launch = 0;
  std::string run_line, build_line;  // --run, --build: a program the user's own build makes
  std::vector<std::string> shape_lines;  // --shape "ARGS": more runs a rewrite must also hold on
  bool apply = false;
  // --program: every kernel worth it, in order, measured end to end
  bool program = false;
  // --example: the shipped example replayed as the editors' Replay the Example replays it
  bool example = false;
  plan_policy plan;
  end_to_end_options end_to_end;
};

// The progress line: rewritten in place on a terminal, one line per event otherwise.
class progress_line {
 public:
  explicit progress_line(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO)) {}
  void operator()(const optimize::progress_event& e) {
    if (quiet_) return;
    std::ostringstream s;
    const int pct = e.steps_total > 0 ? 100 * e.steps_done / e.steps_total : 0;
    s << "kblaster optimize: [" << std::setw(3) << pct << "%] " << e.message << " | " << kblaster::support::count_text(e.candidates, "candidate")
      << " | best " << kblaster::support::times_text(e.best_speedup, 2);
    if (tty_) std::cerr << "\r\033[K" << s.str() << std::flush;
    else std::cerr << s.str() << "\n";
    if (e.phase == "done" && tty_) std::cerr << "\n";
  }

 private:
  bool quiet_, tty_;
};

// --cancel-batches: the provider's jobs still running are cancelled; nothing runs.
int cancel_batches(const optimize::model_settings& model) {
  if (model.deferred.empty()) {
    std::cerr << "kblaster optimize: --cancel-batches needs --batch PROVIDER:DIR\n";
    return 2;
  }
  try {
    const auto chosen = optimize::choose_model(model);
    std::cout << "cancelled " << chosen.deferred->cancel_jobs() << " batch job(s) still running; what they answered "
              << "comes back with the next run, the rest is asked again\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kblaster optimize: " << e.what() << "\n";
    return 1;
  }
}

// The command line's side of a run: its flags as the service's request.
optimize::optimize_request request_of(const optimize_options& o) {
  optimize::optimize_request q;
  q.file = o.task;
  q.program.launch = o.launch;
  q.program.run.args = o.program_args;
  q.program.run.command = kblaster::cli::command_words(o.run_line);
  q.program.run.build = kblaster::cli::command_words(o.build_line);
  for (const auto& line : o.shape_lines) q.program.run.shapes.push_back(kblaster::cli::command_words(line));
  // --kernel: a program's kernel to capture, or a task's kernel source to start from.
  const bool program = role_of(o.task, q.program.run).is_program();
  (program ? q.kernel : q.start_from) = o.kernel;
  q.loop = o.loop;
  q.evaluator = o.evaluator.settings();
  q.model.disabled = o.no_llm;
  q.model.disabled_reason = "no model (--no-llm): the mechanical tier only";
  q.model.replay = o.replay;
  q.model.deferred = o.batch;
  q.model.config_file = o.llm_config;
  q.model.flags = o.llm_flags;
  q.model.budget_tokens = o.loop.limits.tokens;
  q.model.record = o.record;
  q.model.record_note = "kblaster optimize " + o.task;
  q.model.log = [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; };
  q.kb_path = o.kb;
  q.out_dir = o.out;
  q.runs_base = "kblaster-runs";
  q.wait_for_model = o.wait;
  q.poll_seconds = o.poll_seconds;
  q.apply = o.apply;
  return q;
}

// --program: the program's kernels in the order they can give most, each rewrite kept only
// when the whole program runs faster.
int run_optimize_program(const optimize_options& o) {
  program_optimize_request request;
  request.base = request_of(o);
  request.base.kernel.clear();
  request.plan = o.plan;
  request.end_to_end = o.end_to_end;
  request.profile.arch = o.loop.arch;
  request.out_dir = o.out;
  request.apply = o.apply;
  optimize::service_events events;
  events.say = [&](const std::string& line) { if (!o.quiet) std::cerr << "kblaster optimize: " << line << (line.ends_with('\n') ? "" : "\n"); };
  progress_line line(o.quiet || o.json);
  events.progress = [&](const optimize::progress_event& e) { line(e); };
  kblaster::cli::interrupt_stop ctrl_c("kblaster optimize");
  try {
    const auto outcome = optimize_program(request, events, ctrl_c.token());
    if (o.json) std::cout << to_json(outcome).dump(2) << "\n";
    else std::cout << program_outcome_text(outcome);
    return outcome.cancelled ? 130 : 0;
  } catch (const optimize::optimize_refusal& e) {
    std::cerr << "\nkblaster optimize: " << e.what() << "\n";
    return e.kind() == optimize::optimize_refusal_kind::no_gpu ? 3 : e.before_start() ? 2 : 1;
  }
}

// --example: the request the editors' kblaster.replayExample makes (engine/optimize/example_replay:
// the one place that knows the example's recordings and options), in --out/example-NAME.
std::optional<optimize::optimize_request> example_request_of(const optimize_options& o) {
  const auto example = optimize::find_example_replay();
  if (!example) {
    std::cerr << "kblaster optimize: --example: the example's recordings are not installed beside this kblaster "
                 "(examples/example_replay.json in its source tree, or PREFIX/share/kblaster/examples/)\n";
    return std::nullopt;
  }
  const fs::path base = o.out.empty() ? fs::path("kblaster-runs") : fs::path(o.out);
  auto q = optimize::example_request(*example, base / ("example-" + example->name), o.evaluator.settings().replay_pace);
  q.model.log = [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; };
  if (!o.quiet)
    std::cerr << "kblaster optimize: the example " << example->name << ", REPLAYED: GPU results recorded on an "
              << example->recorded_on << " and the model's recorded answers, with the options they were recorded with "
              << "(breadth " << example->breadth << ", depth " << example->depth << ", iterations " << example->iterations
              << ", seed " << example->seed << ") and a fresh KB; nothing is measured here\n";
  return q;
}

int run_optimize(const optimize_options& o) {
  if (o.program) return run_optimize_program(o);
  if (!o.example && o.task.empty()) {
    std::cerr << "kblaster optimize: give the task (or --example)\n";
    return 2;
  }
  if (o.example && (!o.task.empty() || !o.kernel.empty())) {
    std::cerr << "kblaster optimize: --example replays the shipped example: give no task or --kernel with it\n";
    return 2;
  }
  std::optional<optimize::optimize_request> example;
  if (o.example && !(example = example_request_of(o))) return 2;
  const auto request = example ? *example : request_of(o);
  if (o.cancel_batches) return cancel_batches(request.model);
  optimize::service_events events;
  events.say = [&](const std::string& line) { if (!o.quiet) std::cerr << "kblaster optimize: " << line << "\n"; };
  progress_line line(o.quiet || o.json);
  events.progress = [&](const optimize::progress_event& e) { line(e); };
  kblaster::cli::interrupt_stop ctrl_c("kblaster optimize");
  try {
    const auto outcome = optimize::optimize_file(request, events, ctrl_c.token());
    if (!o.json) return kblaster::cli::print_optimize_summary(outcome, std::cout);
    nlohmann::json j = outcome.result.report;
    j["diff"] = outcome.result.diff;
    std::cout << j.dump(2) << "\n";
    return outcome.result.stop_reason == optimize::stop_kind::waiting ? 75 : 0;
  } catch (const optimize::optimize_refusal& e) {
    std::cerr << "\nkblaster optimize: " << e.what() << (e.kind() == optimize::optimize_refusal_kind::needs_kernel ? " with --kernel NAME" : "") << "\n";
    return e.kind() == optimize::optimize_refusal_kind::no_gpu ? 3 : e.before_start() ? 2 : 1;
  }
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand(
      "optimize",
      "Make a task's kernel faster with the MAIC-RL loop (KB-guided model rewrites and the mechanical tier),\n"
      "verifying and timing every candidate. Ctrl-C stops cleanly; the same command resumes.");
  auto o = std::make_shared<optimize_options>();
  app->add_option("task", o->task,
                  "the task (directory with task.json, a .json, or a .cu with a kblaster-task comment), or your own "
                  "program (a .cu with main(): give --kernel, and its arguments after --)");
  app->add_flag("--example", o->example,
                "replay the shipped example (examples/example_replay.json) with its recorded GPU results, answers and "
                "options, as the editors' Replay the Example does: what a machine without a GPU can run; in "
                "--out/example-NAME (default kblaster-runs/example-NAME)");
  app->add_option("args", o->program_args, "a program's arguments (after --)");
  app->add_option("--launch", o->launch, "a program: which launch of --kernel to capture, from 0 (default 0)")->check(CLI::NonNegativeNumber);
  app->add_option("--run", o->run_line,
                  "a program your own build makes, run instead of building the .cu (which then need not define main; it must "
                  "link the CUDA runtime shared: nvcc -cudart shared)");
  app->add_option("--shape", o->shape_lines,
                  "a program: more arguments to run it with (repeatable, e.g. --shape \"333 77\"); that run's launch is captured "
                  "too and every candidate must verify on it as well")
      ->allow_extra_args(false);
  app->add_option("--build", o->build_line, "with --run: the command that builds it, run first (e.g. \"make app\")");
  app->add_flag("--apply", o->apply, "a program: write the best rewrite into your file once its re-capture matches (the original is kept in --out)");
  auto* program = app->add_flag("--program", o->program,
                "a program: optimize its kernels in the order they can give the program most (its profile: share of GPU "
                "time x headroom; the Amdahl bound is shown first), each rewrite kept only if the whole program runs faster, "
                "timed end to end against the original (alternating runs, median with a 95% interval)");
  app->add_option("--min-share", o->plan.min_share_pct, "with --program: leave out kernels with less of the GPU time, in % (default 5)")
      ->needs(program)->check(CLI::Range(0.0, 100.0));
  app->add_option("--max-kernels", o->plan.max_kernels, "with --program: optimize at most this many kernels (default 3)")
      ->needs(program)->check(CLI::Range(1, 64));
  app->add_option("--e2e-pairs", o->end_to_end.min_pairs, "with --program: alternating runs of the two programs, at least (default 10)")
      ->needs(program)->check(CLI::Range(2, 1000));
  app->add_option("--e2e-seconds", [o](const std::vector<std::string>& v) {
        o->end_to_end.budget = std::chrono::duration<double>(std::stod(v.at(0)));
        return true;
      }, "with --program: keep timing pairs past the minimum until this many seconds (default 30)")
      ->needs(program);
  app->add_option("--breadth", o->loop.breadth, "trajectories per iteration (default 8)")->check(CLI::Range(1, 256));
  app->add_option("--depth", o->loop.depth, "steps per trajectory (default 4)")->check(CLI::Range(1, 64));
  app->add_option("--iterations", o->loop.iterations, "iterations, each ending with the KB update (default 2)")->check(CLI::Range(1, 1000));
  app->add_option("--top-k", o->loop.top_k, "techniques considered per step (default 3)")->check(CLI::Range(1, 64));
  app->add_option("--policy", o->loop.policy, "ucb (the default: what searches kept, with an exploration bonus), weighted (the paper's), mean (the weighted draw over every variant's mean, the rule before issue 49), thompson, or greedy (top-1)")
      ->check(CLI::IsMember({"ucb", "weighted", "mean", "thompson", "greedy"}));
  app->add_option("--seed", o->loop.seed, "selection seed (same seed, same replayed results: same run)");
  app->add_option("--budget-tokens", o->loop.limits.tokens, "stop after this many model tokens");
  app->add_option("--budget-gpu-seconds", o->loop.limits.gpu_seconds, "stop after this much GPU time");
  app->add_option("--budget-wall-seconds", o->loop.limits.wall_seconds, "stop after this much wall time");
  app->add_option("--budget-candidates", o->loop.limits.candidates, "stop after this many candidates");
  app->add_option("--jobs", o->loop.jobs, "trajectories run at once (default: breadth)");
  app->add_flag("--no-gradient", [o](std::int64_t) { o->loop.textual_gradient = false; }, "ablation: no textual-gradient KB update");
  app->add_flag("--cycles-only", o->loop.cycles_only, "ablation: the agents see cycles, not the profile");
  app->add_flag("--profile-all", o->loop.profile_all,
                "profile every correct candidate (each KB attempt records its state after; an ncu run per candidate), "
                "not only the input and each step's new best");
  app->add_flag("--no-mechanical-first", [o](std::int64_t) { o->loop.mechanical_first = false; },
                "ask the model even for techniques the mechanical tier implements");
  app->add_option("--arch", o->loop.arch, "architecture for KB statistics (default: the GPU's, e.g. sm_90)");
  app->add_option("--kb", o->kb, "the KB file (default: the user's KB)");
  app->add_option("--out", o->out, "run directory: checkpoint, best kernel, diff, report (default kblaster-runs/TASK)");
  app->add_option("--kernel", o->kernel, "a task: the kernel source to start from (default: the task's); a program: the kernel to optimize");
  auto* no_llm = app->add_flag("--no-llm", o->no_llm, "no model: the mechanical tier only");
  app->add_option("--llm", o->llm_config, "model config file (default $XDG_CONFIG_HOME/kblaster/config.json)")->excludes(no_llm);
  app->add_option("--llm-provider", o->llm_flags.provider, "openai (OpenAI-compatible) or anthropic")->excludes(no_llm);
  app->add_option("--llm-base-url", o->llm_flags.base_url, "the endpoint's base URL")->excludes(no_llm);
  app->add_option("--llm-model", o->llm_flags.model, "model name")->excludes(no_llm);
  app->add_option("--llm-key-env", o->llm_flags.key_env, "environment variable holding the key")->excludes(no_llm);
  app->add_option("--record", o->record, "record the model's exchanges to this cassette")->excludes(no_llm);
  auto* replay = app->add_option("--replay", o->replay, "replay model answers from this cassette (or answer book) instead of a model")
      ->excludes(no_llm)->check(CLI::ExistingFile);
  app->add_option("--batch", o->batch,
                  "a model whose answers arrive later: files:DIR writes each round's questions to DIR/requests-N.jsonl "
                  "(OpenAI batch input) and reads answers from DIR/*.results.jsonl (OpenAI batch output); openai:DIR and "
                  "anthropic:DIR submit them to the provider's batch interface (half price; jobs recorded in DIR); the run "
                  "stops when every trajectory waits (exit status 75) and the same command resumes")
      ->excludes(no_llm)
      ->excludes(replay);
  app->add_flag("--wait", o->wait, "with --batch: poll for the answers and resume until the run ends");
  app->add_flag("--cancel-batches", o->cancel_batches, "with --batch openai:DIR or anthropic:DIR: cancel the jobs still running");
  app->add_option("--poll-seconds", o->poll_seconds, "with --wait: seconds between looks for answers (default 30)")
      ->check(CLI::Range(0.1, 86400.0));
  o->evaluator.add_to(*app, "seconds a candidate may run before it is killed (default 10)");
  app->add_flag("--json", o->json, "print the run report as JSON");
  app->add_flag("--quiet", o->quiet, "no progress line");
  return kblaster::cli::command{app, [o] { return run_optimize(*o); }};
});

}  // namespace
