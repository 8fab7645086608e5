// Building the stress sets.
#include "harness/stress_inputs.h"

#include "harness/tensors.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kblaster::harness {
namespace {

bool scalable(const engine::input_spec& in) {
  return in.file.empty() && (in.init == "randn" || in.init == "uniform") && c10::isFloatingType(scalar_type(in.dtype));
}

double largest_value(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat16: return 65504.0;
    case torch::kBFloat16: return 3.3895313892515355e38;
    case torch::kFloat64: return std::numeric_limits<double>::max();
    default: return std::numeric_limits<float>::max();
  }
}

bool all_finite(const std::vector<torch::Tensor>& outs, double headroom_of_max) {
  for (const auto& o : outs) {
    if (!o.is_floating_point()) continue;
    if (!torch::isfinite(o).all().item<bool>()) return false;
    if (o.numel() && o.abs().max().item<double>() > headroom_of_max) return false;
  }
  return true;
}

}  // namespace

stress_set make_stress_set(const engine::task_spec& task, const std::string& kind, const std::vector<torch::Tensor>& base,
                           const reference_fn& reference) {
  stress_set s;
  s.kind = kind;
  if (std::find(task.stress_skip.begin(), task.stress_skip.end(), kind) != task.stress_skip.end()) {
    s.skipped = "the task declares it out of its domain: " + task.stress_skip_reason;
    return s;
  }
  std::vector<std::size_t> scaled;
  for (std::size_t i = 0; i < task.inputs.size(); ++i)
    if (scalable(task.inputs[i])) scaled.push_back(i);
  if (scaled.empty()) {
    s.skipped = "no input is drawn at random in floating point";
    return s;
  }
  torch::NoGradGuard no_grad;
  const auto scaled_by = [&](const std::function<double(const torch::Tensor&)>& factor) {
    auto inputs = base;
    for (const auto i : scaled) inputs[i] = (inputs[i].to(torch::kFloat64) * factor(inputs[i])).to(inputs[i].scalar_type());
    return inputs;
  };
  if (kind == "large_magnitude") {
    const bool narrow = std::any_of(scaled.begin(), scaled.end(), [&](std::size_t i) {
      return base[i].element_size() == 2;
    });
    s.scale = narrow ? 100 : 1000;
    s.inputs = scaled_by([&](const torch::Tensor&) { return s.scale; });
    s.expected = reference(s.inputs);
    if (!all_finite(s.expected, std::numeric_limits<double>::infinity()))
      s.skipped = "the reference itself is not finite at ×" + std::to_string(static_cast<int>(s.scale));
    return s;
  }
  // near_limits: the largest magnitude the reference still takes with headroom to spare (a
  // thousandth of the type's range at its outputs: a different but correct order of operations
  // must not overflow where the reference did not). Not the square root of the largest value: a
  // square of it is the largest value itself, and a reference that squares its inputs (a
  // variance) overflows inside yet may still return finite nonsense, which no kernel can be
  // asked to match.
  for (const double root : {4.0, 8.0}) {
    std::vector<torch::Tensor> inputs = scaled_by([&](const torch::Tensor& t) {
      const double biggest = t.numel() ? t.abs().max().item<double>() : 0;
      return biggest > 0 ? std::pow(largest_value(t.scalar_type()), 1 / root) / biggest : 1;
    });
    auto expected = reference(inputs);
    double headroom = std::numeric_limits<double>::infinity();
    for (const auto& o : expected)
      if (o.is_floating_point()) headroom = std::min(headroom, largest_value(o.scalar_type()) / 1000);
    if (all_finite(expected, headroom)) {
      s.inputs = std::move(inputs);
      s.expected = std::move(expected);
      s.scale = std::pow(largest_value(base[scaled.front()].scalar_type()), 1 / root);
      return s;
    }
  }
  s.skipped = "the reference leaves the finite range at every scale tried (the type's largest value to the 1/4 and 1/8)";
  return s;
}

}  // namespace kblaster::harness
