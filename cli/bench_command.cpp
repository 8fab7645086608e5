// `kblaster bench KERNELBENCH_DIR --level N`: the KernelBench evaluation pipeline (import, initial
// kernel, optimization loop, result store, report), with `bench report` and `bench merge` for
// runs split over GPUs or Slurm array tasks, and `--learning-curve` for what a learnt KB is worth on
// held-out problems (engine/bench/learning_run.h). The work is in engine/bench/.
#include "cli/command_registry.h"
#include "support/text.h"
#include "cli/interrupt_stop.h"
#include "engine/bench/learning_run.h"
#include "engine/bench/recorded_outcomes.h"
#include "engine/bench/report_files.h"
#include "engine/bench/runner.h"
#include "engine/bench/workers.h"
#include "engine/task/import_cache.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"
#include "engine/toolchain/nvcc_driver.h"
#include "cli/evaluator_flags.h"
#include "engine/optimize/service.h"
#include "kb/sql.h"

#include <iostream>
#include <memory>
#include <optional>

namespace {

namespace fs = std::filesystem;
namespace bench = kblaster::engine::bench;
namespace optimize = kblaster::engine::optimize;
namespace llm = kblaster::engine::llm;

/// The command line: the runner's options plus how to evaluate and where to report.
struct bench_cli_options {
  bench::bench_options bench;
  std::string shard;
  int gpus = 1;
  bool report = true;
  std::string llm_config;
  kblaster::cli::evaluator_flags evaluator{120};  // KernelBench’s inputs reach gigabytes
  std::string recorded;
  std::string batch;  // --batch files:DIR: a model whose answers arrive later
  std::string replay;  // --replay BOOK: answers from a cassette or answer book (tests, reproducing a run)
  std::string import_cache;  // --import-cache DIR; empty: import_cache::default_root()
  bool no_import_cache = false;
  bool wait = false;
  double poll_seconds = 30;
  // --learning-curve: learn on --train, run --test from the learnt KB and from the seed KB
  bool learning = false;
  std::string train, test, foreign_arch;
  std::vector<std::uint64_t> seeds{1, 2};
  int train_breadth = 0;
};

/// `bench report` and `bench merge`.
struct report_cli_options {
  std::vector<std::string> runs, names;
  std::string out;
};

void say(const std::string& line) { std::cerr << "kblaster bench: " << line << "\n"; }

int write_report(const std::vector<fs::path>& dirs, const fs::path& out, const std::vector<std::string>& names) {
  try {
    const auto runs = bench::load_runs(dirs, names);
    const auto p = bench::write_report(runs, out);
    std::cout << bench::table3_markdown(runs) << "\nreport: " << p.markdown.string() << "\n";
    if (!p.html.empty()) std::cout << "        " << p.html.string() << "\n";
    else say(p.html_note);
    std::cout << "        " << p.metrics.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    say(e.what());
    return 2;
  }
}

// The command line's side of a run's set-up. A model only with --llm CONFIG: a benchmark of a
// hundred problems must not start spending on a model from the environment unasked.
optimize::model_settings model_settings_of(const bench_cli_options& o) {
  optimize::model_settings m;
  m.disabled = o.llm_config.empty() && o.batch.empty() && o.replay.empty();
  m.deferred = o.batch;
  m.replay = o.replay;
  m.disabled_reason = "no model (pass --llm CONFIG for one): the mechanical tier only";
  m.config_file = o.llm_config;
  m.budget_tokens = o.bench.loop.limits.tokens;
  m.log = say;
  return m;
}

// Why the learning curve refuses an option of the plain bench: each arm sets it itself.
std::string learning_conflict(const bench_cli_options& o) {
  if (!o.bench.selection.empty()) return "--problems (the sets are --train and --test)";
  if (!o.shard.empty() || o.gpus > 1) return "--shard and --gpus (the arms run one after the other)";
  // A server's --kb is where the experiment's KBs go: the training set learns into it, the held-out
  // arms start from databases beside it (engine/bench/learning_run.h).
  const bool server_kb = bench::on_server(o.bench.kb);
  if (!o.bench.warm_start.empty() || (!o.bench.kb.empty() && !server_kb) || o.bench.empty_kb)
    return "--warm-start, --kb FILE and --empty-kb (the arms' KBs are the experiment's; --kb postgresql://... "
           "puts them on that server)";
  return "";
}

// The command line for the report, a server KB's URI without its password (--kb URI, --kb=URI).
std::string command_line() {
  std::string line;
  for (auto a : bench::own_arguments()) {
    if (const auto at = a.find("postgres"); at != std::string::npos && kblaster::kb::sql::is_server_uri(a.substr(at)))
      a = a.substr(0, at) + kblaster::kb::sql::redact(a.substr(at));
    line += (line.empty() ? "" : " ") + a;
  }
  return line;
}

// The learning-curve experiment, resumed round after round while a deferred model answers (--wait).
int run_learning(const bench_cli_options& o, const bench::bench_hooks& hooks, optimize::optimize_session& session,
                 const kblaster::cli::interrupt_stop& ctrl_c) {
  bench::learning_options lo;
  lo.bench = o.bench;
  lo.train = o.train;
  lo.test = o.test;
  lo.seeds = o.seeds;
  lo.foreign_arch = o.foreign_arch;
  lo.train_breadth = o.train_breadth;
  lo.command = command_line();
  bench::learning_outcome r;
  session.run_rounds(
      {o.wait, o.poll_seconds}, ctrl_c.token(),
      [&] {
        r = bench::run_learning_curve(lo, hooks);
        return r.waiting > 0;
      },
      [&](const llm::hand_over_report& handed) {
        say(std::to_string(r.waiting) + " problem(s) wait for the model: " + handed.description);
      });
  std::cout << "learning curve: " << r.report_markdown.string() << "\n";
  if (!r.report_html.empty()) std::cout << "                " << r.report_html.string() << "\n";
  else say(r.html_note);
  for (const auto& a : r.summary.arm_totals)
    std::cout << "  " << a.arm << ": " << a.runs << " runs counted, " << a.reached << " reached 90 % of the best, mean "
              << a.mean_attempts << " attempts\n";
  if (r.summary.warm_over_cold) std::cout << "  warm / cold mean attempts: " << *r.summary.warm_over_cold << "\n";
  if (r.summary.seed_over_cold) std::cout << "  seed / cold mean attempts: " << *r.summary.seed_over_cold << "\n";
  if (ctrl_c.interrupted()) {
    std::cout << "interrupted: run the same command again to resume\n";
    return 130;
  }
  if (r.waiting > 0) return 75;  // EX_TEMPFAIL
  return r.complete ? 0 : 1;
}

int run(bench_cli_options o) {
  o.bench.import_cache = o.no_import_cache        ? fs::path()
                         : o.import_cache.empty() ? kblaster::engine::import_cache::default_root()
                                                  : fs::path(o.import_cache);
  if (o.learning) {
    if (const auto conflict = learning_conflict(o); !conflict.empty()) {
      say("--learning-curve sets " + conflict + " itself");
      return 2;
    }
    if (o.train.empty() || o.test.empty()) {
      say("--learning-curve needs --train and --test (selections, as --problems)");
      return 2;
    }
  }
  if (!o.shard.empty()) {
    if (auto err = bench::parse_shard(o.shard, o.bench.shard_index, o.bench.shard_count); !err.empty()) {
      say(err);
      return 2;
    }
  }
  if (o.gpus > 1) {
    // One process per GPU, each a shard; then one report over the shared run directory. The
    // shared KB is made from --warm-start here, once: workers that each found it missing would
    // all copy it (a file) or all import it (a server's KB: its statistics counted N times).
    try {
      bench::prepare_shared_kb(o.bench);
    } catch (const std::exception& e) {
      say(e.what());
      return 2;
    }
    const auto args = bench::without_option(bench::own_arguments(), "--gpus");
    const int failed = bench::run_workers(std::vector<std::string>(args.begin() + 1, args.end()), o.gpus);
    if (failed) say(std::to_string(failed) + " worker(s) failed; run the same command again to resume");
    if (o.report) write_report({o.bench.out}, o.bench.out, {});
    return failed ? 1 : 0;
  }
  try {
    kblaster::cli::interrupt_stop ctrl_c("kblaster bench");
    // Every problem runs over the optimize service, in one session: one warm harness, one model.
    // Recorded outcomes (tests, reproducing a report) measure nothing: no evaluator.
    std::optional<optimize::evaluator_settings> measured;
    if (o.recorded.empty()) measured = o.evaluator.settings();
    std::unique_ptr<optimize::optimize_session> session;
    try {
      session = std::make_unique<optimize::optimize_session>(measured, model_settings_of(o),
                                                             std::vector<kblaster::engine::task_spec>{});
    } catch (const optimize::optimize_refusal& e) {
      const bool no_gpu = e.kind() == optimize::optimize_refusal_kind::no_gpu;
      say(no_gpu ? std::string(e.what()) + ", or recorded outcomes with --recorded DIR." : e.cause());
      return no_gpu ? 3 : 1;
    }
    std::string model_note = session->model().note;
    bench::bench_hooks hooks;
    if (!o.recorded.empty()) {
      bench::use_recorded_outcomes(hooks, o.recorded);
      hooks.stop = ctrl_c.token();
      model_note = "recorded outcomes from " + o.recorded;
    } else {
      hooks = bench::session_hooks(*session, ctrl_c.token());  // a degenerate problem is marked and left out of the aggregates
    }
    hooks.log = say;
    o.bench.manifest_extra["model"] = model_note;
    o.bench.manifest_extra["evaluator"] = session->evaluators() ? session->evaluators()->top().describe() : model_note;
    o.bench.manifest_extra["gpu"] = bench::gpu_description();
    o.bench.manifest_extra["git"] = bench::git_version();
    say(model_note + "; results in " + o.bench.out.string());
    if (o.learning) return run_learning(o, hooks, *session, ctrl_c);
    // A deferred model: hand the round's questions over at once; with --wait, poll and resume.
    bench::bench_summary s;
    session->run_rounds(
        {o.wait, o.poll_seconds}, ctrl_c.token(),
        [&] {
          s = bench::run_bench(o.bench, hooks);
          return s.waiting > 0;
        },
        [&](const llm::hand_over_report& handed) {
          say(std::to_string(s.waiting) + " problem(s) wait for the model: " + handed.description +
              (o.wait ? "; looking for them every " + kblaster::support::seconds_text(o.poll_seconds) + " (--wait)"
                      : "; then run the same command again"));
        },
        [] { say("answers arrived in the batch folder: resuming"); });
    std::cout << "bench: " << s.selected << " problems in this shard: " << s.ran << " run (" << s.failed
              << " not ok), " << s.skipped << " already done\n";
    if (ctrl_c.interrupted()) {
      std::cout << "interrupted: run the same command again to resume\n";
      return 130;
    }
    if (s.waiting > 0) {
      std::cout << "waiting: " << s.waiting << " problem(s) wait for the model's answers; the same command resumes them\n";
      return 75;  // EX_TEMPFAIL
    }
    if (o.report && o.bench.shard_count == 1) return write_report({o.bench.out}, o.bench.out, {});
    return 0;
  } catch (const bench::problem_set_error& e) {
    say(e.what());
    return 2;
  } catch (const bench::store_error& e) {
    say(e.what());
    return 2;
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand(
      "bench",
      "Evaluate on KernelBench: import each problem, optimize its initial CUDA kernel, record every result\n"
      "(resumable), and write report.md, report.html and metrics.json. `bench report` and `bench merge` combine runs.");
  auto o = std::make_shared<bench_cli_options>();
  app->add_option("kernelbench_dir", o->bench.kernelbench_dir, "a KernelBench checkout (or a folder with levelN/)");
  app->add_option("--level", o->bench.levels, "level(s) to run (repeat for several; default 1)")->check(CLI::Range(1, 9));
  app->add_option("--problems", o->bench.selection, "selection: ids, ranges and name words, e.g. 1-20,23,Softmax");
  app->add_option("--out", o->bench.out, "the run directory (results, tasks, KB, report); required");
  app->add_option("--kb", o->bench.kb,
                  "the KB shared by every problem and worker: a file, or a team server's postgresql:// URI, where "
                  "private KBs (--empty-kb, the learning curve's arms) are databases beside it (default OUT/kb.sqlite)");
  app->add_option("--warm-start", o->bench.warm_start,
                  "start a new KB from one learnt elsewhere (.sqlite, a postgresql:// URI, or an exported .json)");
  app->add_flag("--empty-kb", o->bench.empty_kb, "ablation: no memory (each problem starts from an empty KB)");
  app->add_option("--kernels", o->bench.kernels_dir, "initial kernels: DIR/levelN/NAME.cu or DIR/NAME.cu");
  app->add_option("--shard", o->shard, "run shard I of N (0-based, e.g. 3/8): one GPU worker or Slurm array task");
  app->add_option("--worker", o->bench.worker, "this worker's name, stored in each result");
  app->add_option("--gpus", o->gpus, "one worker per GPU on this host, sharing the KB (default 1)")->check(CLI::Range(1, 64));
  app->add_option("--breadth", o->bench.loop.breadth, "trajectories per iteration")->check(CLI::Range(1, 256));
  app->add_option("--depth", o->bench.loop.depth, "steps per trajectory")->check(CLI::Range(1, 64));
  app->add_option("--iterations", o->bench.loop.iterations, "iterations per problem")->check(CLI::Range(1, 1000));
  app->add_option("--top-k", o->bench.loop.top_k, "techniques considered per step")->check(CLI::Range(1, 64));
  app->add_option("--policy", o->bench.loop.policy, "ucb (the default: what searches kept, with an exploration bonus), weighted (the paper's), mean (the weighted draw over every variant's mean, the rule before issue 49), thompson, or greedy (top-1, an ablation)")
      ->check(CLI::IsMember({"ucb", "weighted", "mean", "thompson", "greedy"}));
  app->add_flag("--greedy", [o](std::int64_t) { o->bench.loop.policy = "greedy"; }, "ablation: greedy top-1 selection");
  app->add_flag("--no-gradient", [o](std::int64_t) { o->bench.loop.textual_gradient = false; },
                "ablation: no textual-gradient KB update");
  app->add_flag("--no-mechanical-first", [o](std::int64_t) { o->bench.loop.mechanical_first = false; },
                "with a model: every technique goes to the model, the mechanical tier is not probed first");
  app->add_flag("--cycles-only", o->bench.loop.cycles_only, "ablation: feedback is cycles only, not the profile");
  app->add_flag("--profile-all", o->bench.loop.profile_all,
                "profile every correct candidate (each KB attempt records its state after; an ncu run per candidate), "
                "not only the input and each step's new best");
  app->add_option("--seed", o->bench.loop.seed, "selection seed");
  app->add_option("--budget-tokens", o->bench.loop.limits.tokens, "per problem: stop after this many tokens");
  app->add_option("--budget-gpu-seconds", o->bench.loop.limits.gpu_seconds, "per problem: stop after this much GPU time");
  app->add_option("--budget-candidates", o->bench.loop.limits.candidates, "per problem: stop after this many candidates");
  app->add_option("--llm", o->llm_config, "model config file; without it, the mechanical tier only");
  auto* replay = app->add_option("--replay", o->replay, "answer from this cassette or answer book instead of a model")
                     ->check(CLI::ExistingFile);
  app->add_option("--batch", o->batch,
                  "a model whose answers arrive later: files:DIR writes each round's questions to DIR/requests-N.jsonl "
                  "(OpenAI batch input) and reads answers from DIR/*.results.jsonl; openai:DIR and anthropic:DIR submit "
                  "them to the provider's batch interface; the run stops when every problem it can advance waits (exit "
                  "status 75) and the same command resumes")
      ->excludes(replay);
  app->add_flag("--wait", o->wait, "with --batch: poll for the answers and resume until the bench ends");
  app->add_option("--poll-seconds", o->poll_seconds, "with --wait: seconds between looks for answers (default 30)")
      ->check(CLI::Range(0.1, 86400.0));
  o->evaluator.add_to(*app, "seconds one harness request may take beyond timing (KernelBench inputs reach gigabytes; default 120)");
  app->add_flag("--learning-curve", o->learning,
                "learn a KB on --train, then run --test from it and from the seed KB alone with each --seed (and "
                "with --foreign-arch, from it relabelled): OUT/learning.md and learning.html count the attempts each "
                "needs to reach 90 % of the best speedup");
  app->add_option("--train", o->train, "with --learning-curve: the training set (a selection, as --problems)");
  app->add_option("--test", o->test, "with --learning-curve: the held-out set, disjoint from --train");
  app->add_option("--seeds", o->seeds, "with --learning-curve: the held-out runs' seeds (default 1 2)")->delimiter(',');
  app->add_option("--train-breadth", o->train_breadth,
                  "with --learning-curve: the training arm's trajectories per iteration (default --breadth)")
      ->check(CLI::Range(1, 256));
  app->add_option("--foreign-arch", o->foreign_arch,
                  "with --learning-curve: also run the held-out set from the learnt KB with its statistics moved "
                  "under this architecture label (e.g. sm_80)");
  app->add_option("--recorded", o->recorded, "replay whole-problem outcomes recorded earlier (DIR/L1_NAME.json)");
  app->add_option("--import-device", o->bench.import_device, "where problems are exported and timed (default cuda)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--timing-seconds", o->bench.timing_seconds, "exporter timing per side; 0: none")->check(CLI::Range(0.0, 600.0));
  app->add_option("--python", o->bench.python, "Python with PyTorch for the import");
  auto* import_cache = app->add_option(
      "--import-cache", o->import_cache,
      "where imports are kept, keyed by the problem's bytes, PyTorch, the device and the exporter, so that a "
      "problem is exported once (default $KBLASTER_IMPORT_CACHE, else $XDG_CACHE_HOME/kblaster/imports)");
  app->add_flag("--no-import-cache", o->no_import_cache, "run the exporter for every problem; keep nothing")
      ->excludes(import_cache);
  app->add_flag("--retry-failed", o->bench.retry_failed, "re-run stored problems whose status is not ok");
  app->add_flag("--no-report", [o](std::int64_t) { o->report = false; }, "do not write the report at the end");
  auto r = std::make_shared<report_cli_options>();
  auto* report = app->add_subcommand("report", "Report on run directories (several runs: side by side, one fast_p chart)");
  report->add_option("runs", r->runs, "run directories")->required()->check(CLI::ExistingDirectory);
  report->add_option("--name", r->names, "labels of the runs, in order (default: directory names)");
  report->add_option("--out", r->out, "where report.md, report.html and metrics.json go (default: the first run)");
  auto* merge = app->add_subcommand("merge", "Merge run directories written separately (e.g. shards) into one, then report");
  merge->add_option("runs", r->runs, "run directories to merge")->required()->check(CLI::ExistingDirectory);
  merge->add_option("--out", r->out, "the merged run directory")->required();
  return kblaster::cli::command{app, [app, o, r, report, merge]() -> int {
    if (report->parsed()) {
      std::vector<fs::path> dirs(r->runs.begin(), r->runs.end());
      return write_report(dirs, r->out.empty() ? dirs.front() : fs::path(r->out), r->names);
    }
    if (merge->parsed()) {
      try {
        const int n = bench::merge_stores(std::vector<fs::path>(r->runs.begin(), r->runs.end()), r->out);
        say(std::to_string(n) + " results merged into " + r->out);
      } catch (const std::exception& e) {
        say(e.what());
        return 2;
      }
      return write_report({fs::path(r->out)}, r->out, {});
    }
    if (o->bench.kernelbench_dir.empty() || o->bench.out.empty()) {
      say("usage: kblaster bench KERNELBENCH_DIR --level N --out RUN_DIR [options] (see --help)");
      return 2;
    }
    return run(*o);
  }};
});

}  // namespace
