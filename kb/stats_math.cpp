// Statistics updates and predictions for (state, technique, architecture).
#include "kb/stats_math.h"

#include <algorithm>
#include <cmath>

namespace kblaster::kb {

posterior posterior_of(const stats& s, double prior_speedup) {
  posterior p;
  const double correct = static_cast<double>(s.attempts - s.compile_failures - s.incorrect);
  const double failed = static_cast<double>(s.compile_failures + s.incorrect);
  p.alpha = prior_weight * prior_p_correct + std::max(0.0, correct);
  p.beta = prior_weight * (1.0 - prior_p_correct) + std::max(0.0, failed);
  const double n = static_cast<double>(s.n_measured);
  const double prior_log = std::log(std::max(prior_speedup, 1e-6));
  p.mean_log = (prior_weight * prior_log + n * s.mean_log_speedup) / (prior_weight + n);
  // Pool the prior variance with the observed spread, then shrink by the evidence.
  const double spread = (prior_weight * prior_log_variance + s.m2_log_speedup) / (prior_weight + n);
  p.var_of_mean = spread / (prior_weight + n);
  return p;
}

double credit_mean_log_gain(const search_credit& c, double prior_speedup) {
  const double prior_log = std::log(std::max(prior_speedup, 1.0));
  return (credit_prior_weight * prior_log + c.log_gain) / (credit_prior_weight + c.weight);
}

void add_step_credit(search_credit& c, std::optional<double> best_speedup, bool new_best,
                     const nlohmann::json& parameters) {
  const double gain = best_speedup && *best_speedup > 1.0 && std::isfinite(*best_speedup) ? std::log(*best_speedup) : 0.0;
  ++c.steps;
  if (gain > 0) ++c.gains;
  if (new_best) ++c.new_bests;
  c.weight = credit_decay * c.weight + 1.0;
  c.log_gain = credit_decay * c.log_gain + gain;
  if (gain > c.best_log_gain) {
    c.best_log_gain = gain;
    c.best_parameters = parameters.is_object() && !parameters.empty() ? parameters : nlohmann::json(nullptr);
  }
}

double predicted_speedup(const stats& s, double prior_speedup) {
  // Once searches have kept something of the technique, the prediction is what a step keeps
  // (the credit), not the mean over every variant a step tried and threw away.
  if (s.credit.steps > 0) return std::exp(credit_mean_log_gain(s.credit, prior_speedup));
  return variant_mean_speedup(s, prior_speedup);
}

double variant_mean_speedup(const stats& s, double prior_speedup) {
  const posterior p = posterior_of(s, prior_speedup);
  const double p_ok = p.alpha / (p.alpha + p.beta);
  return p_ok * std::exp(p.mean_log) + (1.0 - p_ok);
}

double confidence(const stats& s) {
  const double n = static_cast<double>(s.attempts);
  return n / (n + 5.0);
}

void add_outcome(stats& s, bool compile_ok, bool correct, std::optional<double> speedup,
                 const std::string& when) {
  ++s.attempts;
  s.last_used = when;
  if (!compile_ok) {
    ++s.compile_failures;
    return;
  }
  if (!correct) {
    ++s.incorrect;
    return;
  }
  const double x = std::log(std::max(speedup.value_or(1.0), 1e-9));
  if (speedup.value_or(1.0) > 1.0) ++s.successes;
  ++s.n_measured;
  const double delta = x - s.mean_log_speedup;
  s.mean_log_speedup += delta / static_cast<double>(s.n_measured);
  s.m2_log_speedup += delta * (x - s.mean_log_speedup);
}

search_credit merge(const search_credit& a, const search_credit& b) {
  search_credit r;
  r.steps = a.steps + b.steps;
  r.gains = a.gains + b.gains;
  r.new_bests = a.new_bests + b.new_bests;
  r.weight = a.weight + b.weight;
  r.log_gain = a.log_gain + b.log_gain;
  const search_credit& winner = b.best_log_gain > a.best_log_gain ? b : a;
  r.best_log_gain = winner.best_log_gain;
  r.best_parameters = winner.best_parameters;
  return r;
}

stats merge(const stats& a, const stats& b) {
  // An empty side returns the other exactly, so that importing into an empty KB round-trips.
  if (a.attempts == 0 && a.n_measured == 0 && !a.last_used) return b;
  if (b.attempts == 0 && b.n_measured == 0 && !b.last_used) return a;
  stats r;
  r.attempts = a.attempts + b.attempts;
  r.compile_failures = a.compile_failures + b.compile_failures;
  r.incorrect = a.incorrect + b.incorrect;
  r.successes = a.successes + b.successes;
  r.n_measured = a.n_measured + b.n_measured;
  if (a.n_measured == 0) {
    r.mean_log_speedup = b.mean_log_speedup;
    r.m2_log_speedup = b.m2_log_speedup;
  } else if (b.n_measured == 0) {
    r.mean_log_speedup = a.mean_log_speedup;
    r.m2_log_speedup = a.m2_log_speedup;
  } else {
    const double na = static_cast<double>(a.n_measured), nb = static_cast<double>(b.n_measured);
    const double delta = b.mean_log_speedup - a.mean_log_speedup;
    r.mean_log_speedup = a.mean_log_speedup + delta * nb / (na + nb);
    r.m2_log_speedup = a.m2_log_speedup + b.m2_log_speedup + delta * delta * na * nb / (na + nb);
  }
  r.credit = merge(a.credit, b.credit);
  if (a.last_used && b.last_used) r.last_used = std::max(*a.last_used, *b.last_used);
  else r.last_used = a.last_used ? a.last_used : b.last_used;
  return r;
}

}  // namespace kblaster::kb
