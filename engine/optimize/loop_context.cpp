// The shared state of a run: evaluation cache, accounting, budgets, stop flag, progress.
#include "engine/optimize/loop_context.h"
#include "support/text.h"

#include <cmath>
#include <sstream>

namespace kblaster::engine::optimize {

loop_context::loop_context(const task_spec& t, const loop_options& o, run_environment& e, run_journal& j,
                           std::string id)
    : task(t), options(o), env(e), journal(j), run_id(std::move(id)) {}

version loop_context::evaluate(const std::string& source, std::optional<double> beat_ms) {
  const auto hash = source_hash(task.name, source);
  // The verdict and the time, as measured; a profile only when every candidate gets one. The
  // profile a candidate was given since (as a step's best, in another trajectory or an earlier
  // process) stays in the cache for with_state(), but a step that meets it again records what
  // any step meeting it would, whatever the threads' order or the rounds' (--profile-all aside).
  const auto as_measured = [&](const version& v) {
    return options.profile_all ? v : version{v.hash, v.source, without_profile(v.eval)};
  };
  {
    // Two trajectories may produce the same candidate (a mechanical variant, say) at once:
    // the second waits for the first's result instead of measuring it again.
    std::unique_lock lock(mutex_);
    evaluated_.wait(lock, [&] { return cache_.count(hash) || !in_flight_.count(hash); });
    if (auto it = cache_.find(hash); it != cache_.end()) return as_measured(it->second);
    in_flight_.insert(hash);
  }
  journal.put_source(hash, source);
  evaluation e;
  try {
    if (auto kept = journal.evaluation_of(hash)) {
      e = std::move(*kept);  // measured before a stop or a deferred answer cut its step short
    } else {
      evaluation_request request;
      request.stop = env.stop;
      request.profile = options.profile_all;  // else with_state() profiles the versions whose state the loop needs
      request.beat_ms = beat_ms;
      request.reference_ms = reference_ms;
      e = env.eval->evaluate(task.name, source, request);
      if (!cancelled(e)) journal.put_evaluation(hash, e);
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      in_flight_.erase(hash);
    }
    evaluated_.notify_all();
    throw;
  }
  if (cancelled(e)) {
    {
      std::lock_guard lock(mutex_);
      in_flight_.erase(hash);
    }
    evaluated_.notify_all();
    throw evaluation_cancelled();
  }
  e.code_hash = hash;
  version v{hash, source, e};
  {
    std::lock_guard lock(mutex_);
    in_flight_.erase(hash);
    cache_.emplace(hash, v);
  }
  evaluated_.notify_all();
  return as_measured(v);
}

version loop_context::with_state(const version& v, profile_scope scope) {
  if (!v.eval.correct || v.eval.profile) return v;
  {
    // Two trajectories may need the same version's state at once: the second waits for the
    // first's profile instead of profiling it again.
    std::unique_lock lock(mutex_);
    evaluated_.wait(lock, [&] { return !profiling_.count(v.hash); });
    if (auto it = cache_.find(v.hash); it != cache_.end() && it->second.eval.profile) return it->second;
    profiling_.insert(v.hash);
  }
  const auto done = [&] {
    {
      std::lock_guard lock(mutex_);
      profiling_.erase(v.hash);
    }
    evaluated_.notify_all();
  };
  evaluation e;
  try {
    evaluation_request request;
    request.stop = env.stop;
    request.scope = scope;
    request.next_scope = profile_scope::state_counters;  // every later version's profile (a step's best)
    e = env.eval->evaluate(task.name, v.source, request);  // verified and timed already: only the profile runs
  } catch (...) {
    done();
    throw;
  }
  if (cancelled(e)) {
    done();
    throw evaluation_cancelled();
  }
  e.code_hash = v.hash;
  journal.put_evaluation(v.hash, e);
  version out{v.hash, v.source, e};
  {
    std::lock_guard lock(mutex_);
    cache_[v.hash] = out;
  }
  done();
  return out;
}

void loop_context::prepare(const std::vector<std::string>& sources) {
  for (const auto& s : sources)
    if (!cached(source_hash(task.name, s))) env.eval->prepare(task.name, s);
}

std::optional<version> loop_context::cached(const std::string& hash) const {
  std::lock_guard lock(mutex_);
  const auto it = cache_.find(hash);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

void loop_context::remember(const std::string& source, const evaluation& e) {
  std::lock_guard lock(mutex_);
  auto [it, added] = cache_.emplace(e.code_hash, version{e.code_hash, source, e});
  // A candidate met first unprofiled and later profiled as a step's best keeps its profile.
  if (!added && !it->second.eval.profile && e.profile) it->second = version{e.code_hash, source, e};
}

bool loop_context::stopped() const { return env.stop.stop_requested() || internal_.stop_requested(); }

void loop_context::stop(stop_kind reason) {
  std::lock_guard lock(mutex_);
  if (!stop_reason_) stop_reason_ = reason;
  internal_.request_stop();
}

stop_kind loop_context::stop_reason() const {
  std::lock_guard lock(mutex_);
  if (stop_reason_) return *stop_reason_;
  return env.stop.stop_requested() ? stop_kind::cancelled : stop_kind::finished;
}

std::optional<stop_kind> loop_context::check_budgets() {
  std::optional<stop_kind> reason;
  {
    std::lock_guard lock(mutex_);
    const auto& b = options.limits;
    if (b.candidates > 0 && candidates_ >= b.candidates) reason = stop_kind::budget_candidates;
    else if (b.gpu_seconds > 0 && gpu_seconds_ >= b.gpu_seconds) reason = stop_kind::budget_gpu_seconds;
    else if (b.tokens > 0 && tokens_ >= b.tokens) reason = stop_kind::budget_tokens;
    else if (b.wall_seconds > 0 && wall_seconds() >= b.wall_seconds) reason = stop_kind::budget_wall_seconds;
  }
  if (reason) stop(*reason);
  return reason;
}

void loop_context::account(int candidates, double gpu_seconds, std::int64_t tokens) {
  std::lock_guard lock(mutex_);
  candidates_ += candidates;
  gpu_seconds_ += gpu_seconds;
  tokens_ += tokens;
}

int loop_context::candidates() const {
  std::lock_guard lock(mutex_);
  return candidates_;
}
double loop_context::gpu_seconds() const {
  std::lock_guard lock(mutex_);
  return gpu_seconds_;
}
std::int64_t loop_context::tokens() const {
  std::lock_guard lock(mutex_);
  return tokens_;
}
double loop_context::wall_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void loop_context::set_best_speedup(double s) {
  std::lock_guard lock(mutex_);
  best_speedup_ = std::max(best_speedup_, s);
}

void loop_context::step_done(int iteration, int trajectory, int step, int count, const std::string& message) {
  progress_event e;
  {
    std::lock_guard lock(mutex_);
    steps_done_ += count;
    e.steps_done = steps_done_;
  }
  e.phase = "step";
  e.iteration = iteration;
  e.trajectory = trajectory;
  e.step = step;
  e.message = message;
  emit(std::move(e));
}

void loop_context::step_started(int iteration, int trajectory, int step, const std::string& what) {
  progress_event e;
  e.phase = "step_started";
  e.iteration = iteration;
  e.trajectory = trajectory;
  e.step = step;
  e.message = step_position(options, iteration, trajectory, step) + ": " + what;
  emit(std::move(e));
}

void loop_context::step_profiling(int iteration, int trajectory, int step, double speedup) {
  progress_event e;
  e.phase = "profile";
  e.iteration = iteration;
  e.trajectory = trajectory;
  e.step = step;
  // Not "under ncu": a replayed run, or pages kept from an earlier profile, runs no ncu.
  e.message = step_position(options, iteration, trajectory, step) + ": profiling its new best (" + support::fixed_text(speedup, 2) +
              "x over the step's start) for the state it reached";
  emit(std::move(e));
}

std::string step_position(const loop_options& o, int iteration, int trajectory, int step) {
  return "iteration " + std::to_string(iteration + 1) + "/" + std::to_string(o.iterations) + ", trajectory " +
         std::to_string(trajectory + 1) + "/" + std::to_string(o.breadth) + ", step " + std::to_string(step + 1) + "/" +
         std::to_string(o.depth);
}

void loop_context::emit(progress_event e) {
  std::lock_guard lock(mutex_);
  e.steps_total = steps_total();
  if (e.steps_done == 0) e.steps_done = steps_done_;
  e.candidates = candidates_;
  e.best_speedup = best_speedup_;
  // One event at a time: callbacks need not be thread-safe.
  if (env.progress) env.progress(e);
}

std::optional<kb::kernel_evidence> evidence_of(const evaluation& e) {
  if (!e.profile || e.profile->primary.empty()) return std::nullopt;
  auto ev = e.profile->evidence;
  if (ev.primary.empty()) ev.primary = e.profile->primary;
  return ev;
}

state_of_version state_of(kb::knowledge_base& kb, const evaluation& e, const std::string& arch) {
  const auto ev = evidence_of(e);
  if (!ev) return {"unknown", 0, false};
  const auto m = kb.match_state(*ev, arch);
  if (!m) return {"unknown", 0, false};
  // A discovered state is stored with its components' techniques, so that the step can choose
  // among them and the attempts teach the KB about this very state (the paper's new state).
  if (m->discovered && !kb.read_only()) kb.adopt_discovered(*m, *ev);
  return {m->state, m->score, m->exact};
}

std::string prompt_summary(const evaluation& e, bool cycles_only) {
  if (cycles_only || !e.profile) {
    std::ostringstream s;
    s << "Only timing is known (no profile details).";
    if (e.profile && e.profile->elapsed_cycles) s << " Elapsed cycles: " << *e.profile->elapsed_cycles << ".";
    if (e.runtime_ms) s << " Runtime: " << *e.runtime_ms << " ms.";
    return s.str();
  }
  return e.profile->summary;
}

std::uint64_t step_seed(std::uint64_t seed, int iteration, int trajectory, int step, std::uint64_t salt) {
  // splitmix64 over the coordinates: neighbouring steps get unrelated seeds.
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::uint64_t h = mix(seed);
  for (std::uint64_t v : {static_cast<std::uint64_t>(iteration), static_cast<std::uint64_t>(trajectory),
                          static_cast<std::uint64_t>(step), salt})
    h = mix(h ^ v);
  return h;
}

std::string trajectory_name(const std::string& run_id, int iteration, int trajectory) {
  return run_id + "/i" + std::to_string(iteration) + "/t" + std::to_string(trajectory);
}

}  // namespace kblaster::engine::optimize
