// learning_run: the arms of the learning-curve experiment, one bench run each, then the report.
#include "engine/bench/learning_run.h"

#include "engine/bench/learning_report.h"
#include "engine/bench/report_html.h"
#include "kb/knowledge_base.h"
#include "support/files.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

namespace {

/// One bench run of the experiment.
struct arm_run {
  std::string name;  ///< its folder: learn, cold-s1, seed-s1, warm-s1, foreign-s1, ...
  std::string kind;  ///< learn | cold | seed | warm | foreign
  std::uint64_t seed = 0;
};

std::vector<arm_run> arms_of(const learning_options& o) {
  std::vector<arm_run> arms{{"learn", "learn", o.seeds.front()}};
  for (auto seed : o.seeds) {
    const auto s = "-s" + std::to_string(seed);
    arms.push_back({"cold" + s, "cold", seed});
    arms.push_back({"seed" + s, "seed", seed});
    arms.push_back({"warm" + s, "warm", seed});
    if (!o.foreign_arch.empty()) arms.push_back({"foreign" + s, "foreign", seed});
  }
  return arms;
}

// The learnt KB: OUT/learn/kb.sqlite, or the server's KB itself (--kb URI), which the training runs write.
fs::path learnt_kb(const learning_options& o) {
  return on_server(o.bench.kb) ? o.bench.kb : o.bench.out / "learn" / "kb.sqlite";
}

// What a run folder keeps of a KB it started from or wrote: the file whole (kb.sqlite), or the
// export of a server's private database, dropped since (kb.json; bench_kb.h). Empty: neither.
fs::path kept_kb(const fs::path& dir) {
  std::error_code ec;
  for (const auto* name : {"kb.sqlite", "kb.json"})
    if (fs::exists(dir / name, ec)) return dir / name;
  return {};
}
fs::path foreign_export(const learning_options& o) {
  return o.bench.out / "learn" / ("kb-as-" + o.foreign_arch + ".json");
}

std::vector<problem_ref> problems_of(const bench_options& o, const std::string& selection) {
  std::vector<problem_ref> all;
  for (int level : o.levels)
    for (auto& p : find_problems(o.kernelbench_dir, level)) all.push_back(std::move(p));
  return select_problems(all, selection);
}

std::vector<std::string> keys_of(const std::vector<problem_ref>& problems) {
  std::vector<std::string> keys;
  for (const auto& p : problems) keys.push_back(result_key(p.level, p.name));
  return keys;
}

// The arm's bench run: the shared settings, its own set, folder, seed and starting KB.
bench_options options_of(const learning_options& lo, const arm_run& arm) {
  bench_options o = lo.bench;
  o.selection = arm.kind == "learn" ? lo.train : lo.test;
  o.out = lo.bench.out / arm.name;
  // On a server every arm names it: the training set learns into the server's KB, the held-out
  // arms' KBs are private databases beside it (runner.h, kb_per_problem).
  o.kb = on_server(lo.bench.kb) ? lo.bench.kb : fs::path();
  o.warm_start.clear();
  o.empty_kb = false;
  o.kb_per_problem = arm.kind != "learn";
  o.blank_kb = arm.kind == "cold";
  o.tasks_dir = lo.bench.out / "tasks";
  o.shard_index = 0;
  o.shard_count = 1;
  o.loop.seed = arm.seed;
  o.loop.jobs = 1;
  if (arm.kind == "learn" && lo.train_breadth > 0) o.loop.breadth = lo.train_breadth;
  if (arm.kind == "warm") o.warm_start = learnt_kb(lo);
  if (arm.kind == "foreign") o.warm_start = foreign_export(lo);
  return o;
}

// The foreign arm's start: the learnt KB exported with its statistics relabelled, written once.
void write_foreign_export(const learning_options& lo) {
  const auto file = foreign_export(lo);
  std::error_code ec;
  if (fs::exists(file, ec)) return;
  const auto doc = relabel_architecture(export_kb(learnt_kb(lo)), lo.foreign_arch);
  support::write_file_atomically(file, doc.dump(1) + "\n");
}

// Probes each task's reference once, however many arms run it.
bench_hooks probing_once(bench_hooks hooks) {
  if (!hooks.probe) return hooks;
  auto memo = std::make_shared<std::pair<std::mutex, std::map<std::string, std::optional<reference_probe>>>>();
  hooks.probe = [inner = hooks.probe, memo](const task_spec& task) {
    {
      std::lock_guard lock(memo->first);
      if (const auto it = memo->second.find(task.name); it != memo->second.end()) return it->second;
    }
    auto probe = inner(task);
    std::lock_guard lock(memo->first);
    memo->second[task.name] = probe;
    return probe;
  };
  return hooks;
}

// What the held-out runs added to the statistics, by architecture, over the problems' own KBs.
std::map<std::string, arch_rows> added_by_runs(const fs::path& arm_dir, const std::map<std::string, arch_rows>& start) {
  std::map<std::string, arch_rows> added;
  std::error_code ec;
  if (!fs::is_directory(arm_dir / "work", ec)) return added;
  for (const auto& e : fs::directory_iterator(arm_dir / "work", ec)) {
    const auto kb_path = kept_kb(e.path());
    if (kb_path.empty()) continue;
    for (const auto& [arch, after] : statistics_by_arch(export_kb(kb_path))) {
      const auto it = start.find(arch);
      const arch_rows before = it == start.end() ? arch_rows{} : it->second;
      added[arch].rows += after.rows - before.rows;
      added[arch].attempts += after.attempts - before.attempts;
    }
  }
  return added;
}

// The held-out runs stored so far (and those left out), then each arm's start KB: the states it
// holds statistics for on the runs' architecture, its rows by architecture and what the runs added.
learning_summary summarize_arms(const learning_options& lo, learning_context& c) {
  std::vector<held_out_run> runs;
  std::string arch;
  std::map<std::string, fs::path> start_kb;  // per kind: the first arm's KB (every seed starts alike)
  for (const auto& arm : arms_of(lo)) {
    const auto dir = lo.bench.out / arm.name;
    std::error_code ec;
    if (arm.kind == "learn" || !fs::exists(dir / "manifest.json", ec)) continue;
    const result_store store(dir);
    if (const auto m = store.manifest(); m && c.gpu.empty()) {
      c.gpu = m->value("gpu", std::string());
      c.evaluator = m->value("evaluator", std::string());
    }
    for (const auto& r : store.results()) {
      const auto key = result_key(r.level, r.problem);
      // A run the machinery cut short (a failed judge, a replay miss) is no measure of the search.
      const bool cut_short = r.stop_reason.starts_with("error");
      if (r.status != "ok" || !r.input_ms || cut_short) {
        const auto why = cut_short ? r.stop_reason : r.error;
        c.failed.push_back(arm.name + " " + key + ": " + (cut_short ? "stopped by an " : r.status + ": ") + why.substr(0, 200));
        continue;
      }
      if (arch.empty()) arch = r.arch;
      runs.push_back({key, arm.kind, arm.seed, r.attempts});
    }
    if (const auto kept = kept_kb(dir); !start_kb.count(arm.kind) && !kept.empty()) start_kb[arm.kind] = kept;
  }
  std::map<std::string, std::set<std::string>> kb_states;
  for (const auto& [kind, path] : start_kb) {
    const auto doc = export_kb(path);
    kb_states[kind] = states_with_statistics(doc, arch);
    c.start_rows[kind] = statistics_by_arch(doc);
  }
  for (const auto& arm : arms_of(lo)) {
    if (!c.start_rows.count(arm.kind)) continue;
    for (const auto& [a, r] : added_by_runs(lo.bench.out / arm.name, c.start_rows[arm.kind])) {
      c.added_rows[arm.kind][a].rows += r.rows;
      c.added_rows[arm.kind][a].attempts += r.attempts;
    }
  }
  const int budget = lo.bench.loop.limits.candidates > 0 ? lo.bench.loop.limits.candidates - 1 : 0;  // the input is one
  std::vector<std::string> kinds;
  for (const auto& arm : arms_of(lo))
    if (arm.kind != "learn" && std::find(kinds.begin(), kinds.end(), arm.kind) == kinds.end()) kinds.push_back(arm.kind);
  return summarize_learning(runs, budget, kb_states, kinds, lo.seeds);
}

// The training set learns into a server's KB from the seed, as it does into a new file: a KB that
// already holds attempts (another experiment's, a team's) would be learnt on top of, and the
// warm arm would measure more than the training set. A resumed experiment (OUT/learn has begun)
// is not asked.
void refuse_learnt_already(const fs::path& kb) {
  if (const auto n = attempts_in(kb); n > 0)
    throw store_error("the learning curve learns its training set into " + shown_kb(kb) +
                      " from the seed KB, but it already holds " + std::to_string(n) +
                      " attempts: give --kb an empty database of its own (createdb), or --out the experiment that wrote them");
}

void learning_log(const bench_hooks& hooks, const std::string& line) {
  if (hooks.log) hooks.log(line);
}

}  // namespace

learning_outcome run_learning_curve(const learning_options& lo, const bench_hooks& hooks_in) {
  if (lo.seeds.empty()) throw problem_set_error("the learning curve needs at least one seed");
  if (lo.train.empty() || lo.test.empty())
    throw problem_set_error("the learning curve needs a training set and a held-out set (--train and --test)");
  const auto train = problems_of(lo.bench, lo.train), test = problems_of(lo.bench, lo.test);
  require_disjoint(train, test);
  const auto hooks = probing_once(hooks_in);
  std::error_code ec;
  if (on_server(lo.bench.kb) && !fs::exists(lo.bench.out / "learn" / "manifest.json", ec))
    refuse_learnt_already(lo.bench.kb);
  fs::create_directories(lo.bench.out, ec);
  nlohmann::json experiment{{"train", keys_of(train)}, {"test", keys_of(test)}, {"seeds", lo.seeds},
                            {"foreign_arch", lo.foreign_arch}, {"command", lo.command}, {"train_breadth", lo.train_breadth},
                            {"hyperparameters", hyperparameters_json(lo.bench)}};
  if (on_server(lo.bench.kb)) experiment["kb"] = shown_kb(lo.bench.kb);  // never its password
  write_json_atomic(lo.bench.out / "experiment.json", experiment);

  learning_outcome out;
  out.complete = true;
  for (const auto& arm : arms_of(lo)) {
    if (hooks.stop.stop_requested()) {
      out.complete = false;
      break;
    }
    if (arm.kind == "foreign") write_foreign_export(lo);
    learning_log(hooks, "learning curve: " + arm.name + " (" +
                        (arm.kind == "learn" ? "training set" : "held-out set, " + arm.kind + " KB") + ")");
    const auto s = run_bench(options_of(lo, arm), hooks);
    if (s.waiting > 0 || s.ran + s.skipped < s.selected) {
      // A deferred model's answers, or a stop: the next arms need this one whole (the learnt KB).
      out.waiting = s.waiting;
      out.complete = false;
      break;
    }
  }

  learning_context c;
  c.train = keys_of(train);
  c.test = keys_of(test);
  c.command = lo.command;
  c.foreign_arch = lo.foreign_arch;
  c.hyperparameters = hyperparameters_json(lo.bench);
  c.hyperparameters.erase("seed");  // each arm has its own (--seeds)
  c.train_breadth = lo.train_breadth > 0 ? lo.train_breadth : lo.bench.loop.breadth;
  out.summary = summarize_arms(lo, c);
  out.report_json = lo.bench.out / "learning.json";
  out.report_markdown = lo.bench.out / "learning.md";
  write_json_atomic(out.report_json, {{"summary", to_json(out.summary)}, {"context", to_json(c)}});
  support::write_file_atomically(out.report_markdown, learning_markdown(out.summary, c));
  if (const auto chartjs = find_chartjs(); !chartjs.empty()) {
    out.report_html = lo.bench.out / "learning.html";
    support::write_file_atomically(out.report_html,
                                   learning_html(out.summary, c, support::read_file_if_exists(chartjs).value_or("")));
  } else {
    out.html_note = "no learning.html: Chart.js not found (apt install libjs-chart.js, or set KBLASTER_CHARTJS)";
  }
  return out;
}

}  // namespace kblaster::engine::bench
