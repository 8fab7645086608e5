// The numeric part of the policy: updating statistics with an attempt, merging statistics, and
// the Bayesian prediction of a technique's speedup from its prior and its record.
#pragma once

#include "kb/types.h"

namespace kblaster::kb {

/// Pseudo-observations behind the prior: how much evidence the seed's belief is worth.
inline constexpr double prior_weight = 2.0;
/// Prior probability that an attempt compiles and is correct.
inline constexpr double prior_p_correct = 0.8;
/// Prior variance of the log-speedup of one attempt (a factor of about e^0.5 either way).
inline constexpr double prior_log_variance = 0.25;

/// How much a step's credit keeps of each older step of the same row: after n newer steps an
/// outcome weighs credit_decay^n (0.85: a step 10 steps back counts a fifth), so that a KB
/// follows a toolchain, a driver or a model that changed what pays.
inline constexpr double credit_decay = 0.85;
/// Pseudo-steps behind the prior in the credit's mean: the seed's belief is worth one step.
inline constexpr double credit_prior_weight = 1.0;

/// Posterior over (probability of a correct result, mean log-speedup of correct results).
struct posterior {
  double alpha = 1, beta = 1;     ///< Beta over P(correct)
  double mean_log = 0;            ///< posterior mean of the mean log-speedup
  double var_of_mean = 0.1;       ///< posterior variance of that mean
};

/// Combines a prior speedup with the observed statistics.
posterior posterior_of(const stats& s, double prior_speedup);

/// Expected speedup of one step: what searches kept of the technique (its credit) once it has
/// some, else variant_mean_speedup.
double predicted_speedup(const stats& s, double prior_speedup);

/// Expected speedup of one attempt from the mean over every variant ever tried (failures keep
/// the old version, speedup 1): the prediction before issue 49, which the `mean` policy keeps.
double variant_mean_speedup(const stats& s, double prior_speedup);

/// Confidence in the prediction, 0 with no attempts, approaching 1.
double confidence(const stats& s);

/// Adds one attempt's outcome (Welford's update of the log-speedup moments).
void add_outcome(stats& s, bool compile_ok, bool correct, std::optional<double> speedup,
                 const std::string& when);

/// Credits one step: `best_speedup` is its best variant's speedup over the version it started
/// from (nullopt: no variant was correct), `new_best` whether it became its run's best so far,
/// `parameters` the best variant's.
void add_step_credit(search_credit& c, std::optional<double> best_speedup, bool new_best,
                     const nlohmann::json& parameters);

/// The credit's mean log gain per step, the prior counting as credit_prior_weight steps of
/// log(max(1, prior)): what one more step of the technique is expected to keep.
double credit_mean_log_gain(const search_credit& c, double prior_speedup);

/// Pools two independent records (Chan et al.'s parallel variance); exact when one is empty. (Chan et al.'s parallel variance); exact when one is empty.
stats merge(const stats& a, const stats& b);
/// Pools two credits: counts and decayed sums add, the better winner stays.
search_credit merge(const search_credit& a, const search_credit& b);

}  // namespace kblaster::kb
