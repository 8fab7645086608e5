// The reference probe: constant outputs and ignored inputs over the task's declared distribution.
#include "harness/degenerate.h"

#include "harness/compare.h"
#include "harness/tensors.h"
#include "harness/trace.h"

#include <optional>

namespace kblaster::harness {
namespace {

std::string why_not_redrawn(const engine::input_spec& in) {
  if (!in.file.empty()) return "read from a file: every draw is the same";
  return "init '" + in.init + "': every draw is the same";
}

// The one value every element holds, when they all hold one (NaN never does).
std::optional<double> uniform_value(const torch::Tensor& t) {
  if (t.numel() == 0) return std::nullopt;
  const auto flat = t.detach().reshape({-1}).to(torch::kFloat64);
  const double lo = flat.min().item<double>(), hi = flat.max().item<double>();
  if (lo != hi) return std::nullopt;  // NaN too: comparisons with it are false
  return lo;
}

// True when every output of `changed` passes as `base`'s under the verdict's comparison: a
// kernel that wrote `base` would pass on the inputs `changed` came from. `largest` gets the
// largest finite element difference.
bool outputs_pass_as(const engine::task_spec& task, const std::vector<torch::Tensor>& base,
                     const std::vector<torch::Tensor>& changed, double& largest) {
  bool all = true;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const auto tol = engine::tolerance_for(dtype_name(changed[i].scalar_type()), task, i);
    const auto c = compare_output(base[i], changed[i], tol);
    largest = std::max(largest, c.max_abs_error);
    all = all && c.ok;
  }
  return all;
}

}  // namespace

nlohmann::json probe_reference(const engine::task_spec& task, reference_model& ref, device_context& dev,
                               std::uint64_t seed_base) {
  torch::NoGradGuard no_grad;
  const auto device = dev.torch_device();
  // The first draw is the base every other is held against; the second is kept for its inputs,
  // which replace the base's one at a time.
  const auto base_inputs = make_inputs(task, seed_base, device);
  const auto base = ref.run(base_inputs);
  trace_phase("probe: first draw's reference run");
  std::vector<torch::Tensor> second_inputs;
  std::vector<bool> constant(base.size(), true);
  std::vector<double> spread(base.size(), 0);
  std::vector<std::optional<double>> value;
  for (const auto& o : base) value.push_back(uniform_value(o));
  for (int s = 1; s < probe_draws; ++s) {
    auto inputs = make_inputs(task, seed_base + static_cast<std::uint64_t>(s), device);
    const auto outs = ref.run(inputs);
    trace_phase("probe: another draw's reference run");
    if (outs.size() != base.size()) throw std::runtime_error("the reference returned a different number of outputs");
    for (std::size_t i = 0; i < base.size(); ++i) {
      const auto tol = engine::tolerance_for(dtype_name(outs[i].scalar_type()), task, i);
      const auto c = compare_output(base[i], outs[i], tol);
      constant[i] = constant[i] && c.ok;
      spread[i] = std::max(spread[i], c.max_abs_error);
      if (value[i] && uniform_value(outs[i]) != value[i]) value[i].reset();
    }
    if (s == 1) second_inputs = std::move(inputs);
  }

  nlohmann::json outputs = nlohmann::json::array();
  bool every_output_constant = !base.empty();
  for (std::size_t i = 0; i < base.size(); ++i) {
    nlohmann::json o{{"label", engine::output_label(task, i)}, {"constant", constant[i]}, {"spread", spread[i]}};
    // The value only of a constant output: every element of every draw holds it.
    if (constant[i] && value[i]) o["value"] = *value[i];
    outputs.push_back(std::move(o));
    every_output_constant = every_output_constant && constant[i];
  }

  nlohmann::json inputs = nlohmann::json::array();
  for (std::size_t j = 0; j < task.inputs.size(); ++j) {
    nlohmann::json in{{"label", engine::input_label(task, j)}, {"checked", false}};
    if (every_output_constant) {
      in["why"] = "every output is constant";
    } else if (!is_random_init(task.inputs[j])) {
      in["why"] = why_not_redrawn(task.inputs[j]);
    } else if (same_bits(base_inputs[j], second_inputs[j])) {
      in["why"] = "two draws of it are identical";  // a tiny randint range: nothing to change
    } else {
      auto changed_inputs = base_inputs;
      changed_inputs[j] = second_inputs[j];
      const auto changed = ref.run(changed_inputs);
      trace_phase("probe: one input redrawn, reference run");
      double change = 0;
      in["checked"] = true;
      in["ignored"] = outputs_pass_as(task, base, changed, change);
      in["change"] = change;
    }
    inputs.push_back(std::move(in));
  }
  return {{"draws", probe_draws}, {"outputs", outputs}, {"inputs", inputs}};
}

}  // namespace kblaster::harness
