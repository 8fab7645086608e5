// The bench driver: import, initial kernel, loop, store; one problem at a time, failures recorded.
#include "engine/bench/runner.h"
#include "engine/bench/bench_kb.h"
#include "engine/bench/learning_curve.h"
#include "engine/llm/deferred_backend.h"
#include "support/files.h"
#include "support/text.h"
#include "support/time.h"

#include "kb/knowledge_base.h"
#include "kb/server_databases.h"
#include "kb/sql.h"
#include "kblaster_version.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

namespace {


std::string read_text(const fs::path& p) { return support::read_file_if_exists(p).value_or(""); }

// The import writes a stub that returns "not implemented": it is not an initial kernel.
bool is_import_stub(const std::string& source) {
  return source.find("kblaster import kernelbench") != std::string::npos &&
         source.find("return 2;  // not implemented yet") != std::string::npos;
}

std::optional<double> measured_ms(const nlohmann::json& timing) {
  if (!timing.is_object() || timing.value("status", "") != "measured") return std::nullopt;
  const auto v = timing.value("median_ms", 0.0);
  return v > 0 ? std::optional<double>(v) : std::nullopt;
}

// Where the initial CUDA kernel comes from, in order: --kernels DIR, a NAME.cu beside the problem
// file, the task's own kernel.cu unless it is the import's stub.
std::optional<std::pair<std::string, std::string>> find_initial_kernel(const bench_options& o, const problem_ref& p,
                                                                       const task_spec& task) {
  std::vector<std::pair<fs::path, std::string>> places;
  if (!o.kernels_dir.empty()) {
    places.emplace_back(o.kernels_dir / ("level" + std::to_string(p.level)) / (p.name + ".cu"), "kernels_dir");
    places.emplace_back(o.kernels_dir / (p.name + ".cu"), "kernels_dir");
  }
  places.emplace_back(p.file.parent_path() / (p.name + ".cu"), "beside_problem");
  if (!task.kernel.empty()) places.emplace_back(fs::path(task.kernel), "task");
  std::error_code ec;
  for (const auto& [path, origin] : places) {
    if (!fs::is_regular_file(path, ec)) continue;
    auto text = read_text(path);
    if (!is_import_stub(text)) return std::make_pair(std::move(text), origin);
  }
  return std::nullopt;
}

// The run's KBs: the shared one (--kb, else OUT/kb.sqlite), and where the problems start: the
// shared KB itself, or with a KB per problem the run's own start KB, which is the shared file (it
// never changes: each problem copies it), or on a server a private database beside the shared KB
// (so that the server's own KB keeps what it holds).
struct run_kbs {
  fs::path shared, start;
};

// The run's KB from --warm-start, when it holds no KB yet: a copy (a .sqlite file, a server's KB)
// or an import (an exported .json). A private KB (`own`: the start of a run with a KB per problem)
// is made whole, a copy exact where the ends allow it (bench_kb.h); the shared KB on a server is a
// database its users made, which the warm start is imported into, never replaced.
void prepare_kb(const bench_options& o, const fs::path& kb_path, bool own) {
  if (o.warm_start.empty() || kb_exists(kb_path)) return;
  if (!kb_exists(o.warm_start)) throw store_error("--warm-start " + shown_kb(o.warm_start) + " does not exist");
  const auto why = "bench --warm-start " + shown_kb(o.warm_start);
  const bool json = !on_server(o.warm_start) && o.warm_start.extension() == ".json";
  if (on_server(kb_path) && !own) {
    kb::open_options opts;
    opts.seed = false;  // the learnt KB replaces the seed
    auto kb = kb::knowledge_base::open(kb_path, opts);
    kb.import_json(json ? read_json_file(o.warm_start) : export_kb(o.warm_start), kb::update_cause{"import", why, {}});
  } else if (json) {
    import_kb(kb_path, read_json_file(o.warm_start), why);
  } else {
    copy_kb(o.warm_start, kb_path);
  }
}

// The problems' start with a KB per problem (bench_options::kb_per_problem): made once, from
// --warm-start, blank, or the seed. On a server it is a private database, and its export,
// written beside the results once it is whole (OUT/kb.json), is what the learning curve's report
// reads of it and what says it is whole: a database without it is made again.
void ensure_start_kb(const bench_options& o, const fs::path& kb_path) {
  const auto record = o.out / "kb.json";
  std::error_code ec;
  if (!on_server(kb_path)) {
    if (kb_exists(kb_path)) return;
  } else if (fs::exists(record, ec) && kb_exists(kb_path)) {
    return;
  } else {
    drop_private_kb(kb_path);  // one made in part by a run that stopped
  }
  if (!o.warm_start.empty()) prepare_kb(o, kb_path, true);
  else if (o.blank_kb) make_blank_kb(kb_path);
  else make_seed_kb(kb_path);
  if (on_server(kb_path)) write_json_atomic(record, export_kb(kb_path));
}

// Techniques tried (success: correct and faster than the version it started from), states
// visited (distinct, in order) and the attempts in the loop's order, read back from the KB's
// attempts of this run.
void fill_from_kb(problem_result& r, const fs::path& kb_path, const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return;
  kb::open_options opts;
  opts.seed = false;
  auto kb = kb::knowledge_base::open(kb_path, opts);
  const std::set<std::int64_t> wanted(ids.begin(), ids.end());
  std::vector<kb::attempt> mine;
  for (auto& a : kb.attempts())
    if (wanted.count(a.id)) mine.push_back(std::move(a));
  std::reverse(mine.begin(), mine.end());  // attempts() is newest first
  std::set<std::string> seen;
  for (const auto& a : mine) {
    r.techniques.push_back({a.technique, a.correct && a.measured_speedup && *a.measured_speedup > 1});
    for (const auto* s : {&a.state_before, &a.state_after})
      if (!s->empty() && seen.insert(*s).second) r.states_visited.push_back(*s);
    if (r.arch.empty()) r.arch = a.arch;
  }
  r.attempts = attempts_in_loop_order(std::move(mine), r.input_ms);
}

// --- run_bench's steps ---

// Passes one line to the caller's log, when it gave one.
void log_line(const bench_hooks& hooks, const std::string& line) {
  if (hooks.log) hooks.log(line);
}

// This shard's problems: every problem of the chosen levels, narrowed by --problems, then sharded.
std::vector<problem_ref> problems_of_shard(const bench_options& o) {
  std::vector<problem_ref> all;
  for (int level : o.levels)
    for (auto& p : find_problems(o.kernelbench_dir, level)) all.push_back(std::move(p));
  return shard(select_problems(all, o.selection), o.shard_index, o.shard_count);
}

// The run's manifest: the caller's extras, the hyperparameters (compared on resume) and the inputs.
nlohmann::json bench_manifest(const bench_options& o, const fs::path& kb_path) {
  nlohmann::json manifest = o.manifest_extra;
  manifest["hyperparameters"] = hyperparameters_json(o);
  manifest["created"] = support::utc_now();
  manifest["version"] = KBLASTER_VERSION;
  // A server's URI is named as given, its password never written down.
  manifest["kb"] = o.empty_kb ? std::string("empty per problem (ablation)") : shown_kb(kb_path);
  manifest["warm_start"] = on_server(o.warm_start) ? shown_kb(o.warm_start) : o.warm_start.string();
  manifest["kernelbench_dir"] = fs::absolute(o.kernelbench_dir).string();
  manifest["levels"] = o.levels;
  manifest["selection"] = o.selection;
  return manifest;
}

// True when the problem's stored result stands, so that re-running resumes: always, except under
// --retry-failed for a result that is not ok (an unreadable one counts as not ok).
bool keep_stored(const bench_options& o, const result_store& store, const std::string& key) {
  if (!store.has(key)) return false;
  if (!o.retry_failed) return true;
  try {
    return problem_result_from_json(read_json_file(store.result_path(key))).status == "ok";
  } catch (const std::exception&) {
    return false;
  }
}

// Imports the problem into its task directory unless an earlier run did (its task.json is there),
// and says whether the import cache served it or how long the exporter took.
void import_once(const bench_options& o, const bench_hooks& hooks, const problem_ref& p, const std::string& key,
                 const fs::path& task_dir, problem_result& r) {
  std::error_code ec;
  if (fs::exists(task_dir / "task.json", ec)) return;
  kernelbench_import_options io;
  io.problem = p.file.string();
  io.out_dir = task_dir.string();
  io.python = o.python;
  io.device = o.import_device;
  io.timing_seconds = o.timing_seconds;
  io.cache_dir = o.import_cache;
  io.stop = hooks.stop;
  const auto imported = hooks.import ? hooks.import(io)
                                     : import_kernelbench(io, [&](const std::string& l) { log_line(hooks, key + ": " + l); });
  r.import_cached = imported.cached;
  if (!imported.cached) r.import_seconds = imported.export_seconds;
  log_line(hooks, key + ": import: " + (imported.cached ? std::string("cached") : support::seconds_text(imported.export_seconds)));
}

// The exporter's eager and torch.compile times, from the "kernelbench" section of task.json.
void read_exporter_times(problem_result& r, const fs::path& task_dir) {
  const auto task_json = read_json_file(task_dir / "task.json");
  const auto kb_section = task_json.value("kernelbench", nlohmann::json::object());
  r.eager_ms = measured_ms(kb_section.value("eager", nlohmann::json::object()));
  r.compile_ms = measured_ms(kb_section.value("compile", nlohmann::json::object()));
}

// The problem's reference probed for degeneracy, when the caller can (hooks.probe): the result is
// marked with why. A probe that fails is said and changes nothing: the problem runs as any other.
void probe_problem(const bench_hooks& hooks, const std::string& key, const task_spec& task, problem_result& r) {
  if (!hooks.probe) return;
  std::optional<reference_probe> probe;
  try {
    probe = hooks.probe(task);
  } catch (const std::exception& e) {
    log_line(hooks, key + ": the reference was not probed for degeneracy: " + e.what());
    return;
  }
  if (!probe) return;
  if (!probe->ran()) {
    log_line(hooks, key + ": the reference was not probed for degeneracy: " + probe->error);
    return;
  }
  for (const auto& f : probe->findings()) log_line(hooks, key + ": warning: degenerate task: " + f);
  r.degenerate = probe->summary();
}

// The initial kernel and its origin: a file (see find_initial_kernel), else the model's when the
// caller gave one and it wrote something; nullopt when there is none.
std::optional<std::pair<std::string, std::string>> choose_initial_kernel(const bench_options& o,
                                                                         const bench_hooks& hooks,
                                                                         const problem_ref& p, const task_spec& task) {
  auto initial = find_initial_kernel(o, p, task);
  if (!initial && hooks.initial_kernel) {
    if (auto src = hooks.initial_kernel(p, task, read_text(p.file)); src && !src->empty())
      initial = std::make_pair(std::move(*src), std::string("model"));
  }
  return initial;
}

// Writes the initial kernel to WORK/input.cu (rewritten only when it differs) and returns its path.
fs::path write_input(const fs::path& work, const std::string& source) {
  std::error_code ec;
  fs::create_directories(work, ec);
  const auto input = work / "input.cu";
  if (!fs::exists(input, ec) || read_text(input) != source) std::ofstream(input) << source;
  return input;
}

// The problem's own KB (under --empty-kb or with kb_per_problem): WORK/kb.sqlite, or on a server a
// private database beside the shared KB.
fs::path problem_kb(const bench_options& o, const fs::path& shared, const fs::path& work, const std::string& key) {
  return private_kb(shared, o.out, key, work / "kb.sqlite");
}

// The loop's environment: the shared KB, or the problem's own: made empty once under --empty-kb,
// copied once from the run's KB with kb_per_problem.
optimize::run_environment loop_environment(const bench_options& o, const bench_hooks& hooks, const run_kbs& kbs,
                                           const fs::path& work, const std::string& key, const fs::path& input) {
  optimize::run_environment env;
  env.kb_path = kbs.start;
  if (o.empty_kb || o.kb_per_problem) {
    env.kb_path = problem_kb(o, kbs.shared, work, key);
    if (!kb_exists(env.kb_path)) o.empty_kb ? make_empty_kb(env.kb_path) : copy_kb(kbs.start, env.kb_path);
  }
  env.input = input;
  env.out_dir = work / "run";
  env.stop = hooks.stop;
  return env;
}

// Copies the loop's outcome into the result; it is valid when the loop found a correct kernel.
void take_loop_result(problem_result& r, const optimize::optimize_result& res) {
  r.input_ms = res.input_ms;
  r.input_phases = res.input_phases;
  r.best_ms = res.best_ms;
  r.reference_ms = res.reference_ms;
  r.valid = res.best_ms.has_value();
  r.tokens = res.tokens;
  r.gpu_seconds = res.gpu_seconds;
  r.candidates = res.candidates;
  r.candidate_phases = res.candidate_phases;
  r.correct_candidates = res.correct_candidates;
  r.stop_reason = res.stop_reason.to_string();
  r.run_id = res.run_id;
}

// How a problem's loop ended: done (stored), or not stored so that the next run resumes it.
enum class problem_end { done, cancelled, waiting };

// Imports the problem, finds its initial kernel and runs the loop on it, filling in `r`; throws
// when the import or the input fails (llm::answer_pending when the model's initial kernel is a
// deferred model's answer still to come).
problem_end optimize_problem(const bench_options& o, const bench_hooks& hooks, const result_store& store,
                      const run_kbs& kbs, const problem_ref& p, const std::string& key, problem_result& r) {
  // A task folder is run as is; a KernelBench file is imported once, into the run's tasks or
  // into the folder several runs share.
  const auto task_dir = p.task_folder ? p.file : o.tasks_dir.empty() ? store.task_dir(key) : o.tasks_dir / key;
  if (!p.task_folder) import_once(o, hooks, p, key, task_dir, r);
  read_exporter_times(r, task_dir);
  const auto task = load_task(task_dir.string());
  probe_problem(hooks, key, task, r);

  const auto initial = choose_initial_kernel(o, hooks, p, task);
  if (!initial) {
    r.status = "no_initial_kernel";
    r.error = "no initial CUDA kernel: none in --kernels, no " + p.name + ".cu beside the problem, and no model";
    return problem_end::done;
  }
  r.initial_kernel = initial->second;
  const auto work = store.work_dir(key);
  auto env = loop_environment(o, hooks, kbs, work, key, write_input(work, initial->first));
  const auto res = hooks.optimize(task, o.loop, env);
  take_loop_result(r, res);
  if (!res.attempt_ids.empty()) fill_from_kb(r, env.kb_path, res.attempt_ids);
  if (res.stop_reason == optimize::stop_kind::cancelled) {
    log_line(hooks, key + ": cancelled; not stored, so the next run resumes it");
    return problem_end::cancelled;
  }
  if (res.stop_reason == optimize::stop_kind::waiting) {
    log_line(hooks, key + ": waiting for the model's answers; not stored, so the next run resumes it");
    return problem_end::waiting;
  }
  if (!r.valid) r.error = "no correct kernel: " + res.stop_reason.to_string();
  return problem_end::done;
}

// One problem, start to finish: a failure becomes the result's status, never an exception.
// nullopt when the loop was cancelled or waits for a deferred model (`end` says which), so
// that nothing is stored for it.
std::optional<problem_result> run_problem(const bench_options& o, const bench_hooks& hooks, const result_store& store,
                                          const run_kbs& kbs, const problem_ref& p, const std::string& key,
                                          problem_end& end) {
  problem_result r;
  r.level = p.level;
  r.problem = p.name;
  r.file = p.file.string();
  r.worker = o.worker;
  const auto started = std::chrono::steady_clock::now();
  log_line(hooks, key + ": starting");
  try {
    end = optimize_problem(o, hooks, store, kbs, p, key, r);
    if (end != problem_end::done) return std::nullopt;
  } catch (const llm::answer_pending&) {
    log_line(hooks, key + ": waiting for the model's initial kernel; not stored, so the next run resumes it");
    end = problem_end::waiting;
    return std::nullopt;
  } catch (const import_error& e) {
    if (hooks.stop.stop_requested()) {  // the exporter killed by the stop: not a failure of the problem
      log_line(hooks, key + ": cancelled during the import; not stored, so the next run resumes it");
      end = problem_end::cancelled;
      return std::nullopt;
    }
    r.status = "import_failed";
    r.error = e.what();
  } catch (const optimize::evaluation_error& e) {
    r.status = "input_failed";
    r.error = e.what();
  } catch (const std::exception& e) {
    r.status = "error";
    r.error = e.what();
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (hooks.amend) hooks.amend(r);
  r.finished_at = support::utc_now();
  return r;
}

// On a server, the private KBs of the problems in `done` that are stored: each one's export is
// kept in its work folder (WORK/kb.json, where a file KB stays whole) and its database dropped;
// with `all_done`, the run's own start KB too (its export is OUT/kb.json). A server that does not
// answer is said and leaves them there: the next run of the command drops them.
void retire_private_kbs(const bench_options& o, const bench_hooks& hooks, const run_kbs& kbs, const result_store& store,
                        const std::vector<problem_ref>& done, bool all_done) {
  if (!on_server(kbs.shared) || !(o.empty_kb || o.kb_per_problem)) return;
  try {
    const auto names = kb::server::database_names(kbs.shared.native());
    const auto held = [&](const fs::path& kb) {
      return std::find(names.begin(), names.end(), kb::server::database_of(kb.native())) != names.end();
    };
    for (const auto& p : done) {
      const auto key = result_key(p.level, p.name);
      if (!store.has(key)) continue;
      const auto work = store.work_dir(key);
      const auto kb = problem_kb(o, kbs.shared, work, key);
      if (!held(kb)) continue;
      if (kb_exists(kb)) write_json_atomic(work / "kb.json", export_kb(kb));
      drop_private_kb(kb);
    }
    if (all_done && o.kb_per_problem && held(kbs.start)) drop_private_kb(kbs.start);
  } catch (const std::exception& e) {
    log_line(hooks, std::string("the run's KBs on the server were not all dropped (the next run drops them): ") + e.what());
  }
}

}  // namespace

nlohmann::json hyperparameters_json(const bench_options& o) {
  const auto& l = o.loop;
  nlohmann::json j{{"breadth", l.breadth},
                   {"depth", l.depth},
                   {"iterations", l.iterations},
                   {"top_k", l.top_k},
                   {"policy", l.policy},
                   {"seed", l.seed},
                   {"textual_gradient", l.textual_gradient},
                   {"cycles_only", l.cycles_only},
                   {"profile_all", l.profile_all},
                   {"mechanical_first", l.mechanical_first},
                   {"max_repairs", l.max_repairs},
                   {"empty_kb", o.empty_kb},
                   {"budget_tokens", l.limits.tokens},
                   {"budget_gpu_seconds", l.limits.gpu_seconds},
                   {"budget_candidates", l.limits.candidates}};
  // Absent when off, so that runs made before it keep their hyperparameters (compared on resume).
  if (o.kb_per_problem) j["kb_per_problem"] = true;
  if (o.blank_kb) j["blank_kb"] = true;
  return j;
}

void prepare_shared_kb(const bench_options& o) {
  if (o.empty_kb || o.kb_per_problem) return;
  prepare_kb(o, o.kb.empty() ? o.out / "kb.sqlite" : o.kb, false);
}

bench_hooks session_hooks(optimize::optimize_session& session, std::stop_token stop) {
  bench_hooks hooks;
  hooks.optimize = [&session](const task_spec& task, const optimize::loop_options& loop, optimize::run_environment& env) {
    return session.run(task, loop, env);
  };
  hooks.probe = [&session, stop](const task_spec& task) { return session.probe_reference(task, stop); };
  hooks.stop = std::move(stop);
  return hooks;
}

bench_summary run_bench(const bench_options& o, const bench_hooks& hooks) {
  const auto mine = problems_of_shard(o);
  result_store store(o.out);
  run_kbs kbs;
  kbs.shared = o.kb.empty() ? o.out / "kb.sqlite" : o.kb;
  kbs.start = o.kb_per_problem ? private_kb(kbs.shared, o.out, "", kbs.shared) : kbs.shared;
  const bool pending = std::any_of(mine.begin(), mine.end(),
                                   [&](const problem_ref& p) { return !keep_stored(o, store, result_key(p.level, p.name)); });
  if (o.kb_per_problem) {
    if (pending) ensure_start_kb(o, kbs.start);
  } else if (!o.empty_kb) {
    prepare_kb(o, kbs.start, false);
  }
  store.ensure_manifest(bench_manifest(o, kbs.start));

  bench_summary summary;
  summary.selected = static_cast<int>(mine.size());
  bool stopped = false;
  for (const auto& p : mine) {
    if (hooks.stop.stop_requested()) {
      stopped = true;
      break;
    }
    const auto key = result_key(p.level, p.name);
    if (keep_stored(o, store, key)) {
      ++summary.skipped;
      continue;
    }
    auto end = problem_end::done;
    const auto r = run_problem(o, hooks, store, kbs, p, key, end);
    if (end == problem_end::waiting) {
      // Waiting for a deferred model's answers. With a KB of its own each problem goes on to the
      // next, so that one round asks every problem's questions; with the shared KB the next
      // problem would learn from a KB the synchronous run would have had fuller: stop here.
      ++summary.waiting;
      if (o.empty_kb) continue;
      stopped = true;
      break;
    }
    if (!r) {  // cancelled: not stored, so the next run resumes it
      stopped = true;
      break;
    }
    store.put(*r);
    retire_private_kbs(o, hooks, kbs, store, {p}, false);
    ++summary.ran;
    if (r->status != "ok") ++summary.failed;
    log_line(hooks, key + ": " + r->status + (r->error.empty() ? "" : " (" + r->error.substr(0, 200) + ")"));
  }
  // Whatever an earlier run left on the server (a run stopped between storing a result and
  // dropping its KB), and the start KB once every problem is done.
  retire_private_kbs(o, hooks, kbs, store, mine, !stopped && summary.waiting == 0);
  return summary;
}

}  // namespace kblaster::engine::bench
