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

/// Posterior over (probability of a correct result, mean log-speedup of correct results).
struct posterior {
  double alpha = 1, beta = 1;     ///< Beta over P(correct)
  double mean_log = 0;            ///< posterior mean of the mean log-speedup
  double var_of_mean = 0.1;       ///< posterior variance of that mean
};

/// Combines a prior speedup with the observed statistics.
posterior posterior_of(const stats& s, double prior_speedup);

/// Expected speedup of one attempt: failures keep the old version (speedup 1).
double predicted_speedup(const stats& s, double prior_speedup);

/// Confidence in the prediction, 0 with no attempts, approaching 1.
double confidence(const stats& s);

/// Adds one attempt's outcome (Welford's update of the log-speedup moments).
void add_outcome(stats& s, bool compile_ok, bool correct, std::optional<double> speedup,
                 const std::string& when);

/// Pools two independent records (Chan et al.'s parallel variance); exact when one is empty.
stats merge(const stats& a, const stats& b);

}  // namespace kblaster::kb
