// The measurement loop and its statistics.
#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

namespace kblaster::harness {
namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double rsd_of(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size() > 1 ? v.size() - 1 : 1);
  return mean > 0 ? std::sqrt(var) / mean : 0;
}

// The median's standard error relative to it, from the IQR (robust to the outliers a context
// switch or a clock change makes): 1.253 sigma / sqrt(n), sigma = IQR / 1.349 for a normal.
double median_se_of(const std::vector<double>& v) {
  if (v.size() < 2) return 1;
  const double median = quantile(v, 0.5);
  if (median <= 0) return 1;
  const double sigma = (quantile(v, 0.75) - quantile(v, 0.25)) / 1.349;
  return 1.253 * sigma / std::sqrt(static_cast<double>(v.size())) / median;
}

}  // namespace

nlohmann::json timing_stats::to_json() const {
  nlohmann::json j{{"samples", samples},     {"median_ms", median_ms}, {"q1_ms", q1_ms},
                   {"q3_ms", q3_ms},         {"iqr_ms", iqr_ms},       {"mean_ms", mean_ms},
                   {"min_ms", min_ms},       {"max_ms", max_ms},       {"rsd", rsd},
                   {"median_se", median_se},
                   {"converged", converged}, {"stopped_slower", stopped_slower}, {"l2_flushed", l2_flushed}, {"drift", drift},
                   {"throttled", throttled}, {"host_median_ms", host_median_ms}, {"host_min_ms", host_min_ms}};
  if (sm_clock_start_mhz >= 0) j["sm_clock_mhz"] = {sm_clock_start_mhz, sm_clock_end_mhz};
  if (!note.empty()) j["note"] = note;
  return j;
}

void warm_up(const timing_policy& policy, const std::function<void()>& call) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  for (int i = 0; i < policy.warmup; ++i) {
    call();
    if (std::chrono::duration<double>(clock::now() - started).count() >= policy.warmup_seconds) break;
  }
}

timing_stats measure_samples(device_context& dev, const std::function<timed_sample()>& sample, const timing_policy& policy) {
  using clock = std::chrono::steady_clock;
  timing_stats st;
  bool throttled_start = false, throttled_end = false;
  st.sm_clock_start_mhz = dev.sm_clock_mhz(&throttled_start);
  std::vector<double> samples, host;
  const auto started = clock::now();
  while (true) {
    const auto one = sample();
    samples.push_back(one.ms);
    host.push_back(one.host_ms);
    const auto n = static_cast<int>(samples.size());
    if (policy.slower_than_ms > 0 && n >= policy.min_samples_slower &&
        *std::min_element(samples.begin(), samples.end()) > policy.slower_than_ms * (1 + policy.slower_margin)) {
      st.stopped_slower = true;
      break;
    }
    if (n >= policy.min_samples && rsd_of(samples) < policy.rsd_target) {
      st.converged = true;
      break;
    }
    // Sorting for the quantiles every tenth sample keeps the check cheap at thousands of samples.
    if (n >= std::max(policy.min_samples, policy.min_samples_for_se) && n % timing_rules::median_se_every == 0 &&
        median_se_of(samples) < policy.median_se_target) {
      st.converged = true;
      break;
    }
    if (n >= policy.max_samples) break;
    if (std::chrono::duration<double>(clock::now() - started).count() > policy.max_seconds &&
        n >= timing_rules::min_samples_at_cap)
      break;
  }
  st.sm_clock_end_mhz = dev.sm_clock_mhz(&throttled_end);

  st.samples = static_cast<int>(samples.size());
  st.median_ms = quantile(samples, 0.5);
  st.q1_ms = quantile(samples, 0.25);
  st.q3_ms = quantile(samples, 0.75);
  st.iqr_ms = st.q3_ms - st.q1_ms;
  st.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  st.min_ms = *std::min_element(samples.begin(), samples.end());
  st.max_ms = *std::max_element(samples.begin(), samples.end());
  st.rsd = rsd_of(samples);
  st.median_se = median_se_of(samples);
  st.host_median_ms = quantile(host, 0.5);
  st.host_min_ms = *std::min_element(host.begin(), host.end());
  st.l2_flushed = dev.is_cuda();
  if (samples.size() >= 9) {
    const auto third = samples.size() / 3;
    const std::vector<double> first(samples.begin(), samples.begin() + static_cast<long>(third));
    const std::vector<double> last(samples.end() - static_cast<long>(third), samples.end());
    st.drift = quantile(last, 0.5) / quantile(first, 0.5) - 1;
  }
  st.throttled = throttled_start || throttled_end || st.drift > timing_rules::throttle_drift;
  std::string note;
  if (!dev.is_cuda()) note = "CPU: no cache flush between samples (timed the same way otherwise)";
  if (st.stopped_slower)
    note += std::string(note.empty() ? "" : "; ") + "stopped after " + std::to_string(st.samples) +
            " samples: even the fastest is over " + std::to_string(policy.slower_than_ms) +
            " ms by more than " + std::to_string(static_cast<int>(policy.slower_margin * 100)) +
            " %, the time it had to beat";
  else if (!st.converged)
    note += std::string(note.empty() ? "" : "; ") + "stopped at the cap before the median was known to the target";
  if (st.throttled)
    note += std::string(note.empty() ? "" : "; ") +
            (throttled_start || throttled_end ? "the GPU reported clock throttling" : "samples drifted by more than 5 %");
  st.note = note;
  return st;
}

}  // namespace kblaster::harness
