// Bench metrics: order statistics, fast_p and the per-level grouping.
#include "engine/bench/metrics.h"

#include <algorithm>
#include <cmath>

namespace kblaster::engine::bench {

speedup_summary summarize(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values)
    if (x > 0 && std::isfinite(x)) v.push_back(x);
  speedup_summary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0, log_sum = 0;
  int above = 0;
  for (double x : v) {
    sum += x;
    log_sum += std::log(x);
    above += x > 1 ? 1 : 0;
  }
  const auto n = v.size();
  s.mean = sum / static_cast<double>(n);
  s.geomean = std::exp(log_sum / static_cast<double>(n));
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  s.share_above_1 = static_cast<double>(above) / static_cast<double>(n);
  return s;
}

const std::vector<double>& fast_p_thresholds() {
  static const std::vector<double> t = [] {
    std::vector<double> r;
    for (int i = 0; i <= 40; ++i) r.push_back(i / 10.0);  // i / 10.0: exact decimal, no accumulated error
    return r;
  }();
  return t;
}

std::vector<double> fast_p_curve(const std::vector<std::optional<double>>& speedups, int total) {
  std::vector<double> curve;
  for (double p : fast_p_thresholds()) {
    int n = 0;
    for (const auto& s : speedups) n += s && *s > p ? 1 : 0;
    curve.push_back(total > 0 ? static_cast<double>(n) / total : 0.0);
  }
  return curve;
}

namespace {

group_metrics group_of(const std::string& name, int level, const std::vector<const problem_result*>& rs) {
  group_metrics g;
  g.name = name;
  g.level = level;
  g.problems = static_cast<int>(rs.size());
  std::vector<std::optional<double>> eager, compile, best;
  std::vector<optimize::phase_seconds> phases, inputs;
  for (const auto* r : rs) {
    phases.insert(phases.end(), r->candidate_phases.begin(), r->candidate_phases.end());
    if (r->input_phases) inputs.push_back(*r->input_phases);
    ++g.statuses[r->status];
    g.tokens += r->tokens;
    g.gpu_seconds += r->gpu_seconds;
    g.wall_seconds += r->wall_seconds;
    g.candidates += r->candidates;
    // What it cost counts; what it measured does not.
    if (!r->degenerate.empty()) {
      ++g.degenerate;
      continue;
    }
    g.valid += r->valid ? 1 : 0;
    const auto s = speedups_of(*r);
    eager.push_back(s.eager);
    compile.push_back(s.compile);
    best.push_back(s.best_baseline);
  }
  g.cost = optimize::summarize_costs(phases);
  g.input_cost = optimize::summarize_costs(inputs);
  const int scored = g.problems - g.degenerate;
  g.valid_rate = scored ? static_cast<double>(g.valid) / scored : 0;
  const auto present = [](const std::vector<std::optional<double>>& v) {
    std::vector<double> out;
    for (const auto& x : v)
      if (x) out.push_back(*x);
    return out;
  };
  g.eager = summarize(present(eager));
  g.compile = summarize(present(compile));
  g.best = summarize(present(best));
  g.fast_p_eager = fast_p_curve(eager, scored);
  g.fast_p_compile = fast_p_curve(compile, scored);
  g.fast_p_best = fast_p_curve(best, scored);
  if (g.tokens > 0 && g.best.n > 0)
    g.speedup_per_mtoken = g.best.geomean / (static_cast<double>(g.tokens) / g.problems / 1e6);
  return g;
}

}  // namespace

run_metrics compute_metrics(const std::string& name, const std::vector<problem_result>& results) {
  run_metrics m;
  m.name = name;
  std::map<int, std::vector<const problem_result*>> by_level;
  std::vector<const problem_result*> all;
  for (const auto& r : results) {
    by_level[r.level].push_back(&r);
    all.push_back(&r);
    for (const auto& t : r.techniques) {
      auto& c = m.techniques[t.technique];
      (t.success ? c.success : c.failure)++;
    }
    for (const auto& s : r.states_visited) ++m.states[s];
  }
  for (const auto& [level, rs] : by_level) m.levels.push_back(group_of("level " + std::to_string(level), level, rs));
  m.overall = group_of("all", 0, all);
  return m;
}

nlohmann::json to_json(const speedup_summary& s) {
  return {{"n", s.n},         {"mean", s.mean}, {"geomean", s.geomean},
          {"median", s.median}, {"min", s.min},   {"max", s.max}, {"share_above_1", s.share_above_1}};
}

nlohmann::json to_json(const group_metrics& g) {
  nlohmann::json j{{"name", g.name},
                   {"level", g.level},
                   {"problems", g.problems},
                   {"degenerate", g.degenerate},
                   {"valid", g.valid},
                   {"valid_rate", g.valid_rate},
                   {"speedup", {{"eager", to_json(g.eager)}, {"compile", to_json(g.compile)}, {"best", to_json(g.best)}}},
                   {"fast_p",
                    {{"p", fast_p_thresholds()},
                     {"eager", g.fast_p_eager},
                     {"compile", g.fast_p_compile},
                     {"best", g.fast_p_best}}},
                   {"tokens", g.tokens},
                   {"gpu_seconds", g.gpu_seconds},
                   {"wall_seconds", g.wall_seconds},
                   {"candidates", g.candidates},
                   {"cost_per_candidate", optimize::to_json(g.cost)},
                   {"cost_per_input_kernel", optimize::to_json(g.input_cost)},
                   {"statuses", g.statuses}};
  j["speedup_per_mtoken"] = g.speedup_per_mtoken ? nlohmann::json(*g.speedup_per_mtoken) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json to_json(const run_metrics& m) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& g : m.levels) levels.push_back(to_json(g));
  nlohmann::json techniques = nlohmann::json::object();
  for (const auto& [t, c] : m.techniques) techniques[t] = {{"success", c.success}, {"failure", c.failure}};
  return {{"name", m.name}, {"levels", levels}, {"overall", to_json(m.overall)}, {"techniques", techniques},
          {"states", m.states}};
}

}  // namespace kblaster::engine::bench
