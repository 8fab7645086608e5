// Summaries of per-candidate seconds (see candidate_cost.h).
#include "engine/optimize/candidate_cost.h"
#include "support/text.h"

#include <algorithm>

namespace kblaster::engine::optimize {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

template <typename F>
double median_by(const std::vector<phase_seconds>& phases, F f) {
  std::vector<double> v;
  v.reserve(phases.size());
  for (const auto& p : phases) v.push_back(f(p));
  return median_of(std::move(v));
}

}  // namespace

cost_summary summarize_costs(const std::vector<phase_seconds>& phases) {
  cost_summary c;
  c.candidates = static_cast<int>(phases.size());
  if (phases.empty()) return c;
  for (const auto& p : phases) {
    c.total_device += p.device();
    if (p.profile > 0) ++c.profiled;
  }
  c.mean_device = c.total_device / static_cast<double>(phases.size());
  c.median_device = median_by(phases, [](const phase_seconds& p) { return p.device(); });
  c.median_wall = median_by(phases, [](const phase_seconds& p) { return p.device() + p.build_wait + p.profile_report + p.profile_export; });
  c.median.build = median_by(phases, [](const phase_seconds& p) { return p.build; });
  c.median.build_wait = median_by(phases, [](const phase_seconds& p) { return p.build_wait; });
  c.median.harness_start = median_by(phases, [](const phase_seconds& p) { return p.harness_start; });
  c.median.reference = median_by(phases, [](const phase_seconds& p) { return p.reference; });
  c.median.runner = median_by(phases, [](const phase_seconds& p) { return p.runner; });
  c.median.verify = median_by(phases, [](const phase_seconds& p) { return p.verify; });
  c.median.time = median_by(phases, [](const phase_seconds& p) { return p.time; });
  c.median.profile = median_by(phases, [](const phase_seconds& p) { return p.profile; });
  c.median.profile_report = median_by(phases, [](const phase_seconds& p) { return p.profile_report; });
  c.median.profile_export = median_by(phases, [](const phase_seconds& p) { return p.profile_export; });
  return c;
}

nlohmann::json to_json(const cost_summary& c) {
  return {{"candidates", c.candidates},       {"profiled", c.profiled},
          {"median_device_seconds", c.median_device}, {"mean_device_seconds", c.mean_device},
          {"median_wall_seconds", c.median_wall},     {"total_device_seconds", c.total_device},
          {"median_phase_seconds", to_json(c.median)}};
}

std::string describe_costs(const cost_summary& c, const std::string& noun) {
  if (c.candidates == 0) return "no " + noun + " evaluated";
  const auto& m = c.median;
  using support::seconds_text;
  return "median " + seconds_text(c.median_device, 2) + " of device time per " + noun + " (runner " +
         seconds_text(m.runner, 2) + ", verify " + seconds_text(m.verify, 2) + ", time " + seconds_text(m.time, 2) +
         ", profile " + seconds_text(m.profile, 2) + "; build " + seconds_text(m.build, 2) + ", of which waited " +
         seconds_text(m.build_wait, 2) + "), mean " + seconds_text(c.mean_device, 2) + ", " + std::to_string(c.profiled) +
         " of " + std::to_string(c.candidates) + " profiled";
}

std::string describe_input_cost(const phase_seconds& p, bool profile_reused) {
  using support::seconds_text;
  std::string s = seconds_text(p.device(), 2) + " of device time, once (harness start " + seconds_text(p.harness_start, 2) +
                  ", verify " + seconds_text(p.verify, 2) + ", time " + seconds_text(p.time, 2) +
                  " with the reference's, profile " + seconds_text(p.profile, 2);
  if (profile_reused) s += ": ncu's pages kept from an earlier profile of this kernel on the same data";
  return s + ")";
}

}  // namespace kblaster::engine::optimize
