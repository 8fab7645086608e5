// The weighted and Thompson selection policies, with guaranteed exploration of untried
// techniques and retirement of techniques that keep failing.
#include "kb/selection_policy.h"

#include "kb/stats_math.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace kblaster::kb {
namespace {

bool is_untried(const candidate& c) { return c.attempts_in_state == 0; }

bool is_retired(const candidate& c, int retire_after) {
  if (retire_after <= 0) return false;
  // Once steps are credited, a technique retires after steps without a gain: a step that kept a
  // better variant is no failure, whatever its other variants measured.
  if (c.steps_in_state > 0) return c.steps_in_state >= retire_after && c.gains_in_state == 0;
  return c.attempts_in_state >= retire_after && c.successes_in_state == 0;
}

bool has_credit(const candidate& c) { return c.opt.statistics.credit.steps > 0; }

// The upper confidence bound of a technique's next step, in log speedup: its credit's mean (the
// prior counting as one step), the exploration bonus for how little it was tried, and what its
// learnt transitions lead to.
double upper_bound(const candidate& c, double state_weight, double exploration) {
  const auto& k = c.opt.statistics.credit;
  return credit_mean_log_gain(k, c.opt.prior_speedup) +
         exploration * std::sqrt(std::log(1.0 + state_weight) / (1.0 + k.weight)) + c.follow_on;
}

double weight_of(double gain, double temperature) {
  return std::exp(std::log(std::max(gain, 1e-9)) / temperature);
}

// Draws one index from `items` with probability proportional to weight (greedy when T <= 0).
std::size_t weighted_pick(const std::vector<const candidate*>& items, double temperature,
                          random_source& rng) {
  if (temperature <= 0.0) return 0;  // items are sorted best first
  std::vector<double> w(items.size());
  // Normalise by the best gain so that small temperatures do not overflow.
  const double top = items.front()->opt.predicted_speedup;
  for (std::size_t i = 0; i < items.size(); ++i)
    w[i] = weight_of(items[i]->opt.predicted_speedup / top, temperature);
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  double u = rng.uniform() * total;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (u < w[i]) return i;
    u -= w[i];
  }
  return w.size() - 1;
}

void sort_by_gain(std::vector<const candidate*>& v) {
  std::stable_sort(v.begin(), v.end(), [](const candidate* a, const candidate* b) {
    return a->opt.predicted_speedup > b->opt.predicted_speedup;
  });
}

double thompson_sample(const candidate& c, random_source& rng) {
  const posterior p = posterior_of(c.opt.statistics, c.opt.prior_speedup);
  const double p_ok = rng.beta(p.alpha, p.beta);
  const double mean_log = p.mean_log + std::sqrt(p.var_of_mean) * rng.normal();
  return p_ok * std::exp(mean_log) + (1.0 - p_ok);
}

}  // namespace

std::optional<selection_policy> parse_policy(std::string_view name) {
  if (name == "ucb") return selection_policy::ucb;
  if (name == "weighted") return selection_policy::weighted;
  if (name == "mean") return selection_policy::mean;
  if (name == "thompson") return selection_policy::thompson;
  return std::nullopt;
}

std::string_view to_string(selection_policy p) noexcept {
  switch (p) {
    case selection_policy::ucb: return "ucb";
    case selection_policy::weighted: return "weighted";
    case selection_policy::mean: return "mean";
    case selection_policy::thompson: return "thompson";
  }
  return "ucb";
}

std::vector<choice> choose(std::vector<candidate> candidates, const selection_request& request) {
  random_source rng(request.seed);
  if (request.policy == selection_policy::mean)
    for (auto& c : candidates) c.opt.predicted_speedup = variant_mean_speedup(c.opt.statistics, c.opt.prior_speedup);
  // A technique whose preconditions the kernel does not meet is no candidate at all: not even
  // the fallback offers launch_overhead_reduction for one long launch.
  if (request.evidence)
    std::erase_if(candidates, [&](const candidate& c) { return !fits(c.opt.technique, *request.evidence); });
  // The order of candidates must not depend on how SQL returned them.
  std::sort(candidates.begin(), candidates.end(),
            [](const candidate& a, const candidate& b) { return a.opt.technique < b.opt.technique; });

  std::vector<const candidate*> live, untried;
  for (const auto& c : candidates)
    if (!is_retired(c, request.retire_after)) {
      live.push_back(&c);
      if (is_untried(c)) untried.push_back(&c);
    }
  std::string fallback_reason = "exploit";
  if (live.empty()) {  // every technique keeps failing: still answer, and say so
    for (const auto& c : candidates) live.push_back(&c);
    fallback_reason = "fallback";
  }

  std::vector<choice> out;
  auto take = [&](const candidate* c, double score, const std::string& reason) {
    out.push_back(choice{c->opt, score, reason});
    live.erase(std::find(live.begin(), live.end(), c));
    untried.erase(std::remove(untried.begin(), untried.end(), c), untried.end());
  };
  const std::size_t k = std::min(request.k, live.size());

  // The search credit decides once any technique of the state has some: best bound first, a
  // seeded draw breaking exact ties (an empty KB's techniques all bound alike).
  if (request.policy == selection_policy::ucb && std::any_of(live.begin(), live.end(), [](const candidate* c) {
        return has_credit(*c);
      })) {
    double state_weight = 0;
    for (const candidate* c : live) state_weight += c->opt.statistics.credit.weight;
    std::vector<std::tuple<double, double, const candidate*>> ranked;
    for (const candidate* c : live) ranked.emplace_back(upper_bound(*c, state_weight, request.exploration), rng.uniform(), c);
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b) : std::get<1>(a) > std::get<1>(b);
    });
    for (const auto& [bound, tie, c] : ranked) {
      if (out.size() >= k) break;
      out.push_back(choice{c->opt, std::exp(bound), fallback_reason == "fallback" ? fallback_reason
                                                    : has_credit(*c)             ? "exploit"
                                                                                 : "explore"});
    }
    return out;
  }

  // Untried techniques get a reserved slot: always when k >= 2 or nothing has been tried,
  // otherwise with explore_probability. The uniform draw happens either way, to keep the
  // random stream (and so determinism across versions of the candidate set) simple.
  if (k > 0 && !untried.empty()) {
    const bool all_untried = untried.size() == live.size();
    const double u = rng.uniform();
    if (!all_untried && (k >= 2 || u < request.explore_probability)) {
      sort_by_gain(untried);
      const double t = request.temperature > 0 ? request.temperature : 1.0;
      const candidate* c = untried[weighted_pick(untried, t, rng)];
      take(c, c->opt.predicted_speedup, "explore");
    }
  }

  if (request.policy != selection_policy::thompson) {  // weighted, mean, and ucb without credit
    while (out.size() < k) {
      sort_by_gain(live);
      std::vector<const candidate*> pool(
          live.begin(), live.begin() + static_cast<std::ptrdiff_t>(std::min(
                                           live.size(), std::max(request.pool, k - out.size()))));
      const candidate* c = pool[weighted_pick(pool, request.temperature, rng)];
      take(c, c->opt.predicted_speedup, fallback_reason);
    }
  } else {
    std::vector<std::pair<double, const candidate*>> samples;
    for (const candidate* c : live) samples.emplace_back(thompson_sample(*c, rng), c);
    std::stable_sort(samples.begin(), samples.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [score, c] : samples) {
      if (out.size() >= k) break;
      take(c, score, fallback_reason);
    }
  }
  return out;
}

}  // namespace kblaster::kb
