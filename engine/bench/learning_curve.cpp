// learning_curve: the attempts to 90 % of the best, the curves and the coverage (see the header).
#include "engine/bench/learning_curve.h"

#include "kb/types.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace kblaster::engine::bench {

namespace {

// Attempts counted of a run: its first `budget` (all when budget is 0).
int counted_length(const std::vector<attempt_point>& attempts, int budget) {
  const int n = static_cast<int>(attempts.size());
  return budget > 0 ? std::min(n, budget) : n;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The arms in order of first appearance, and the seeds sorted.
void arms_and_seeds(const std::vector<held_out_run>& runs, learning_summary& s) {
  std::set<std::uint64_t> seeds;
  for (const auto& r : runs) {
    if (std::find(s.arms.begin(), s.arms.end(), r.arm) == s.arms.end()) s.arms.push_back(r.arm);
    seeds.insert(r.seed);
  }
  s.seeds.assign(seeds.begin(), seeds.end());
}

// A task's runs counted against its target; complete when every arm ran every seed once.
task_learning count_task(const std::string& task, const std::vector<const held_out_run*>& mine, const learning_summary& s) {
  task_learning t;
  t.task = task;
  for (const auto* r : mine)
    for (double v : best_so_far(r->attempts, counted_length(r->attempts, s.budget))) t.best = std::max(t.best, v);
  t.target = reach_fraction * t.best;
  t.informative = t.target > 1;
  std::set<std::pair<std::string, std::uint64_t>> ran;
  for (const auto& arm : s.arms)
    for (const auto* r : mine) {
      if (r->arm != arm) continue;
      auto& curve = t.curves[arm];
      curve.resize(static_cast<std::size_t>(s.budget) + 1, 0.0);
      const auto mine_curve = best_so_far(r->attempts, s.budget);
      for (std::size_t n = 0; n < curve.size(); ++n) curve[n] += std::log(mine_curve[n]);
      run_count c;
      c.arm = arm;
      c.seed = r->seed;
      c.attempts = counted_length(r->attempts, s.budget);
      c.best = best_so_far(r->attempts, c.attempts).back();
      c.to_target = attempts_to_reach(r->attempts, t.target, s.budget);
      c.counted = c.to_target ? *c.to_target : s.budget + 1;
      ran.insert({arm, r->seed});
      t.runs.push_back(c);
    }
  t.complete = ran.size() == t.runs.size() && ran.size() == s.arms.size() * s.seeds.size();
  for (auto& [arm_name, curve] : t.curves) {
    const auto& arm = arm_name;  // a structured binding cannot be captured before C++20 (clang)
    const auto n = std::count_if(t.runs.begin(), t.runs.end(), [&](const run_count& c) { return c.arm == arm; });
    for (auto& v : curve) v = std::exp(v / static_cast<double>(n));
  }
  return t;
}

// An arm's totals over the informative, complete tasks.
arm_learning total_of_arm(const std::string& arm, const learning_summary& s, const std::vector<held_out_run>& runs) {
  arm_learning a;
  a.arm = arm;
  std::vector<double> counts;
  std::vector<double> log_sum(static_cast<std::size_t>(s.budget) + 1, 0.0);
  std::set<std::string> counted_tasks;
  for (const auto& t : s.tasks) {
    if (!t.informative || !t.complete) continue;
    counted_tasks.insert(t.task);
    for (const auto& c : t.runs) {
      if (c.arm != arm) continue;
      ++a.runs;
      if (c.to_target) ++a.reached;
      counts.push_back(c.counted);
    }
  }
  for (const auto& r : runs) {
    if (r.arm != arm || !counted_tasks.count(r.task)) continue;
    const auto curve = best_so_far(r.attempts, s.budget);
    for (std::size_t n = 0; n < curve.size(); ++n) log_sum[n] += std::log(curve[n]);
  }
  if (a.runs == 0) return a;
  double total = 0;
  for (double c : counts) total += c;
  a.mean_attempts = total / static_cast<double>(counts.size());
  a.median_attempts = median_of(counts);
  for (double l : log_sum) a.curve.push_back(std::exp(l / a.runs));
  return a;
}

state_coverage coverage_of(const std::string& arm, const std::vector<held_out_run>& runs, const std::set<std::string>& kb,
                           int budget) {
  state_coverage c;
  c.kb_states = static_cast<int>(kb.size());
  std::set<std::string> visited, covered;
  for (const auto& r : runs) {
    if (r.arm != arm) continue;
    const int n = counted_length(r.attempts, budget);
    for (int i = 0; i < n; ++i) {
      const auto& state = r.attempts[static_cast<std::size_t>(i)].state;
      ++c.attempts;
      if (state.empty()) continue;
      visited.insert(state);
      if (kb.count(state)) {
        covered.insert(state);
        ++c.attempts_covered;
      }
    }
  }
  c.visited.assign(visited.begin(), visited.end());
  c.covered.assign(covered.begin(), covered.end());
  return c;
}

// The export's states (every key but the "$..." ones) with their optimizations.
template <typename Doc, typename Fn>
void for_each_optimization(Doc& doc, Fn&& fn) {
  if (!doc.is_object()) return;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key().starts_with("$") || !it->is_object() || !it->contains("optimizations")) continue;
    for (auto& o : (*it)["optimizations"])
      if (o.is_object()) fn(it.key(), o);
  }
}

std::int64_t attempts_of(const nlohmann::json& stats) {
  return stats.is_object() ? stats.value("attempts", std::int64_t{0}) : 0;
}

// The trajectory's number in a KB trajectory name ("run-…/i0/t3" -> 3).
int trajectory_number(const std::string& trajectory) {
  const auto at = trajectory.rfind("/t");
  if (at == std::string::npos) return 0;
  try {
    return std::stoi(trajectory.substr(at + 2));
  } catch (const std::exception&) {
    return 0;
  }
}

nlohmann::json optional_json(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

std::vector<attempt_point> attempts_in_loop_order(std::vector<kb::attempt> mine, std::optional<double> input_ms) {
  std::stable_sort(mine.begin(), mine.end(), [](const kb::attempt& a, const kb::attempt& b) {
    return std::make_tuple(a.iteration, trajectory_number(a.trajectory), a.step, a.id) <
           std::make_tuple(b.iteration, trajectory_number(b.trajectory), b.step, b.id);
  });
  std::vector<attempt_point> out;
  std::set<std::string> seen;
  for (const auto& a : mine) {
    if (!a.code_hash.empty() && !seen.insert(a.code_hash).second) continue;
    attempt_point p{a.technique, a.state_before, std::nullopt};
    if (a.correct && a.runtime_ms && *a.runtime_ms > 0 && input_ms && *input_ms > 0) p.speedup = *input_ms / *a.runtime_ms;
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<int> attempts_to_reach(const std::vector<attempt_point>& attempts, double target, int budget) {
  if (target <= 1) return 0;
  const int n = counted_length(attempts, budget);
  for (int i = 0; i < n; ++i) {
    const auto& s = attempts[static_cast<std::size_t>(i)].speedup;
    if (s && *s >= target) return i + 1;
  }
  return std::nullopt;
}

std::vector<double> best_so_far(const std::vector<attempt_point>& attempts, int length) {
  std::vector<double> out{1.0};
  double best = 1.0;
  for (int n = 1; n <= length; ++n) {
    if (static_cast<std::size_t>(n) <= attempts.size())
      if (const auto& s = attempts[static_cast<std::size_t>(n - 1)].speedup; s && *s > best) best = *s;
    out.push_back(best);
  }
  return out;
}

void require_disjoint(const std::vector<problem_ref>& train, const std::vector<problem_ref>& test) {
  std::set<std::pair<int, std::string>> learnt;
  for (const auto& p : train) learnt.insert({p.level, p.name});
  std::string shared;
  for (const auto& p : test)
    if (learnt.count({p.level, p.name})) shared += (shared.empty() ? "" : ", ") + result_key(p.level, p.name);
  if (!shared.empty())
    throw problem_set_error("the training and held-out sets must not share a problem; both hold " + shared);
}

learning_summary summarize_learning(const std::vector<held_out_run>& runs, int budget,
                                    const std::map<std::string, std::set<std::string>>& kb_states,
                                    const std::vector<std::string>& arms, const std::vector<std::uint64_t>& seeds) {
  learning_summary s;
  arms_and_seeds(runs, s);
  if (!arms.empty()) s.arms = arms;
  if (!seeds.empty()) s.seeds = seeds;
  s.budget = budget;
  if (s.budget <= 0)
    for (const auto& r : runs) s.budget = std::max(s.budget, static_cast<int>(r.attempts.size()));
  std::map<std::string, std::vector<const held_out_run*>> by_task;
  for (const auto& r : runs) by_task[r.task].push_back(&r);
  for (const auto& [task, mine] : by_task) s.tasks.push_back(count_task(task, mine, s));
  for (const auto& arm : s.arms) s.arm_totals.push_back(total_of_arm(arm, s, runs));
  for (const auto& [arm, states] : kb_states)
    if (std::find(s.arms.begin(), s.arms.end(), arm) != s.arms.end()) s.coverage[arm] = coverage_of(arm, runs, states, s.budget);
  const arm_learning *warm = nullptr, *cold = nullptr, *seed = nullptr;
  for (const auto& a : s.arm_totals) {
    if (a.arm == "warm") warm = &a;
    if (a.arm == "cold") cold = &a;
    if (a.arm == "seed") seed = &a;
  }
  auto ratio = [](const arm_learning* a, const arm_learning* b) -> std::optional<double> {
    if (a && b && a->runs > 0 && b->runs > 0 && b->mean_attempts > 0) return a->mean_attempts / b->mean_attempts;
    return std::nullopt;
  };
  s.warm_over_cold = ratio(warm, cold);
  s.seed_over_cold = ratio(seed, cold);
  return s;
}

std::set<std::string> states_with_statistics(const nlohmann::json& kb_export, const std::string& arch) {
  std::set<std::string> out;
  for_each_optimization(kb_export, [&](const std::string& state, const nlohmann::json& o) {
    const auto by_arch = o.value("by_arch", nlohmann::json::object());
    const bool own = by_arch.contains(arch) && attempts_of(by_arch[arch]) > 0;
    if (own || attempts_of(o) > 0) out.insert(state);
  });
  return out;
}

std::map<std::string, arch_rows> statistics_by_arch(const nlohmann::json& kb_export) {
  std::map<std::string, arch_rows> out;
  auto add = [&](const std::string& arch, std::int64_t n) {
    if (n <= 0) return;
    ++out[arch].rows;
    out[arch].attempts += n;
  };
  for_each_optimization(kb_export, [&](const std::string&, const nlohmann::json& o) {
    add(kb::all_archs, attempts_of(o));
    const auto by_arch = o.value("by_arch", nlohmann::json::object());
    for (const auto& [arch, x] : by_arch.items()) add(arch, attempts_of(x));
  });
  return out;
}

nlohmann::json relabel_architecture(nlohmann::json kb_export, const std::string& label) {
  std::set<std::string> archs;
  for_each_optimization(kb_export, [&](const std::string&, nlohmann::json& o) {
    if (!o.contains("by_arch") || !o["by_arch"].is_object()) return;
    nlohmann::json moved = nlohmann::json::object();
    for (auto& [arch, x] : o["by_arch"].items()) {
      archs.insert(arch);
      moved[label] = x;
    }
    o["by_arch"] = moved;
  });
  if (archs.size() > 1)
    throw std::invalid_argument("the KB holds statistics of several architectures; relabelling would pool them");
  for (auto it = kb_export.begin(); it != kb_export.end(); ++it) {
    if (it.key().starts_with("$") || !it->is_object() || !it->contains("lessons")) continue;
    for (auto& l : (*it)["lessons"])
      if (l.is_object() && l.value("arch", std::string(kb::all_archs)) != kb::all_archs) l["arch"] = label;
  }
  return kb_export;
}

nlohmann::json to_json(const learning_summary& s) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : s.tasks) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& c : t.runs)
      runs.push_back({{"arm", c.arm}, {"seed", c.seed}, {"attempts", c.attempts}, {"best", c.best},
                      {"to_target", optional_json(c.to_target)}, {"counted", c.counted}});
    tasks.push_back({{"task", t.task}, {"best", t.best}, {"target", t.target}, {"informative", t.informative},
                     {"complete", t.complete}, {"runs", runs}, {"curves", t.curves}});
  }
  nlohmann::json arms = nlohmann::json::array();
  for (const auto& a : s.arm_totals)
    arms.push_back({{"arm", a.arm}, {"runs", a.runs}, {"reached", a.reached}, {"mean_attempts", a.mean_attempts},
                    {"median_attempts", a.median_attempts}, {"curve", a.curve}});
  nlohmann::json coverage = nlohmann::json::object();
  for (const auto& [arm, c] : s.coverage)
    coverage[arm] = {{"kb_states", c.kb_states}, {"visited", c.visited}, {"covered", c.covered},
                     {"attempts", c.attempts}, {"attempts_covered", c.attempts_covered}};
  return {{"fraction", reach_fraction},
          {"budget", s.budget},
          {"arms", s.arms},
          {"seeds", s.seeds},
          {"tasks", tasks},
          {"totals", arms},
          {"coverage", coverage},
          {"warm_over_cold", s.warm_over_cold ? nlohmann::json(*s.warm_over_cold) : nlohmann::json(nullptr)},
          {"seed_over_cold", s.seed_over_cold ? nlohmann::json(*s.seed_over_cold) : nlohmann::json(nullptr)}};
}

}  // namespace kblaster::engine::bench
