// Ranking a program's kernels by what they can give the program, and the Amdahl bound.
#include "engine/program/program_plan.h"
#include "support/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace kblaster::engine {

namespace {


planned_kernel planned_from(const kernel_time& k) {
  planned_kernel p;
  p.function = k.function;
  p.share_pct = k.share_pct;
  p.total_us = k.total_us;
  p.launches = k.launches;
  p.headroom = k.headroom;
  p.bound_saving_us = k.headroom && *k.headroom >= 1 ? k.total_us * (1 - 1 / *k.headroom) : k.total_us;
  return p;
}

std::string kernel_text(const planned_kernel& k) {
  std::string s = k.function + " (" + support::fixed_text(k.share_pct, 0) + "% of GPU time";
  s += k.headroom ? ", headroom ~" + support::fixed_text(*k.headroom, *k.headroom < 10 ? 1 : 0) + "x" : ", headroom not measured";
  return s + ", up to " + duration_text(k.bound_saving_us) + " back)";
}

}  // namespace

program_plan plan_program(const program_profile& profile, const plan_policy& policy) {
  program_plan plan;
  plan.gpu_span_us = profile.gpu.span_us;
  std::vector<planned_kernel> all;
  for (const auto& k : profile.kernels) all.push_back(planned_from(k));
  std::stable_sort(all.begin(), all.end(),
                   [](const planned_kernel& a, const planned_kernel& b) { return a.bound_saving_us > b.bound_saving_us; });
  for (const auto& k : all) {
    if (k.share_pct < policy.min_share_pct)
      plan.left_out.push_back(k.function + ": " + support::fixed_text(k.share_pct, 1) + "% of GPU time, below " +
                              support::fixed_text(policy.min_share_pct, 0) + "%");
    else if (plan.kernels.size() >= policy.max_kernels)
      plan.left_out.push_back(k.function + ": beyond the " + std::to_string(policy.max_kernels) + " kernels planned");
    else
      plan.kernels.push_back(k);
  }
  const double saving = std::accumulate(plan.kernels.begin(), plan.kernels.end(), 0.0,
                                        [](double s, const planned_kernel& k) { return s + k.bound_saving_us; });
  // A span the savings would empty (a program all kernel at speed-of-light zero) has no finite bound.
  if (plan.gpu_span_us > 0 && saving < plan.gpu_span_us) plan.amdahl_bound = plan.gpu_span_us / (plan.gpu_span_us - saving);
  else if (saving > 0) plan.amdahl_bound = INFINITY;
  return plan;
}

std::string plan_text(const program_plan& plan) {
  if (plan.kernels.empty()) return "plan: no kernel takes enough of the GPU time to be worth optimizing\n";
  std::string s = "plan: ";
  for (std::size_t i = 0; i < plan.kernels.size(); ++i) s += (i ? ", then " : "") + kernel_text(plan.kernels[i]);
  s += "\n";
  for (const auto& l : plan.left_out) s += "  left out: " + l + "\n";
  s += "Amdahl bound: the program's GPU span at most " +
       (std::isfinite(plan.amdahl_bound) ? support::fixed_text(plan.amdahl_bound, 2) + "x" : std::string("unbounded")) +
       " faster, if " + (plan.kernels.size() == 1 ? "that kernel" : "those kernels") +
       " reached speed of light (host work and start-up gain nothing)\n";
  return s;
}

std::vector<int> split_budget(int candidates, const program_plan& plan) {
  std::vector<int> out(plan.kernels.size(), 0);
  if (candidates <= 0 || plan.kernels.empty()) return out;
  const double saving = std::accumulate(plan.kernels.begin(), plan.kernels.end(), 0.0,
                                        [](double s, const planned_kernel& k) { return s + k.bound_saving_us; });
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double weight = saving > 0 ? plan.kernels[i].bound_saving_us / saving : 1.0 / static_cast<double>(out.size());
    out[i] = std::max(1, static_cast<int>(std::lround(weight * candidates)));
  }
  return out;
}

}  // namespace kblaster::engine
