// The verify request: the candidate called on the task's seeds under every guard and compared with
// the reference, then on the stress sets beyond the task's distribution (stress_inputs.h).
#include "harness/compare.h"
#include "harness/judge.h"
#include "harness/judge_replies.h"
#include "harness/guarded_call.h"
#include "harness/shared_arena.h"
#include "harness/stress_inputs.h"
#include "harness/tensors.h"
#include "harness/trace.h"

#include <memory>
#include <stdexcept>

namespace kblaster::harness {
namespace {

/// What the seeds leave for the next seed and the stress sets.
struct seed_trail {
  nlohmann::json seeds = nlohmann::json::array();  // each seed's entry, as the reply says it
  std::unique_ptr<call_frame> frame;                // the candidate's memory, mapped at the first seed
  std::vector<torch::Tensor> previous;              // the last seed's outputs
  std::vector<torch::Tensor> last_inputs;
};

/// The check a failed comparison of a seed's output names.
std::string failed_check(const comparison& c) {
  return c.unwritten == c.elements ? "nan_poison"
         : c.unwritten > 0         ? "partial_output"
         : c.reason.rfind("zero", 0) == 0 || c.reason.rfind("constant", 0) == 0 ? "constant_output"
         : c.mismatches > 0        ? "tolerance"
                                   : "magnitude";
}

/// Output i of `seed` failed `c`: the reply. The same bits as for the previous seed's different
/// inputs are a stored answer.
nlohmann::json seed_output_failure(const engine::task_spec& task, std::size_t i, const comparison& c, std::uint64_t seed,
                                   const std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& previous) {
  if (!previous.empty() && same_bits(outputs[i], previous[i]))
    return fail("fail", "cached_result",
                engine::output_label(task, i) + " is bit-identical to the previous seed's although the inputs changed: "
                "a result cached across calls (seed " + std::to_string(seed) + ")");
  return fail("fail", failed_check(c),
              engine::output_label(task, i) + ": " + c.reason + " (seed " + std::to_string(seed) + ")");
}

/// Maps the candidate's memory into its runner at the first seed; null when it is mapped.
nlohmann::json map_seed_frame(device_context& dev, const engine::task_spec& task, runner_process& runner,
                              const std::vector<torch::Tensor>& args, const std::vector<torch::Tensor>& expected,
                              runner_process::deadline until, seed_trail& trail) {
  if (trail.frame) return nullptr;
  trail.frame = std::make_unique<call_frame>(dev, args, expected, initial_inputs(task));
  return map_failure(runner.map(trail.frame->arena(), until));
}

/// One seed: inputs drawn, the reference run, the candidate called under every guard, each output
/// compared. Null when it passed (its entry is in the trail), else the failing reply.
nlohmann::json verify_seed(device_context& dev, const engine::task_spec& task, runner_process& runner,
                           reference_model& ref, std::uint64_t seed, runner_process::deadline until, seed_trail& trail) {
  const auto inputs = make_inputs(task, seed, dev.torch_device());
  trace_phase("verify: inputs drawn");
  const auto expected = ref.run(inputs);
  trace_phase("verify: reference run");
  const auto args = with_params(inputs, ref);
  if (auto bad = map_seed_frame(dev, task, runner, args, expected, until, trail); !bad.is_null()) return bad;
  auto call = guarded_call(dev, runner, *trail.frame, args, until);
  trace_phase("verify: candidate called and guarded");
  nlohmann::json entry{{"seed", seed}};
  const auto failed = [&](nlohmann::json r) {
    entry["ok"] = false;
    trail.seeds.push_back(entry);
    r["seeds"] = trail.seeds;
    return r;
  };
  if (!call.check.empty()) {
    call.reason += " (seed " + std::to_string(seed) + ")";
    return failed(call_failure(call));
  }
  if (call.outputs.size() != expected.size()) throw std::logic_error("output count");
  entry["outputs"] = nlohmann::json::array();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto tol = engine::tolerance_for(dtype_name(expected[i].scalar_type()), task, i);
    auto c = compare_output(call.outputs[i], expected[i], tol);
    trace_phase("verify: output compared");
    entry["outputs"].push_back(c.to_json());
    if (!c.ok) return failed(seed_output_failure(task, i, c, seed, call.outputs, trail.previous));
  }
  entry["ok"] = true;
  trail.seeds.push_back(entry);
  trail.previous = call.outputs;
  trail.last_inputs = inputs;
  return nullptr;
}

/// One stress set of `kind` on the last seed's inputs. Null when it passed or was skipped (its
/// entry is in `stress`), else the failing reply.
nlohmann::json verify_stress_set(device_context& dev, const engine::task_spec& task, runner_process& runner,
                                 reference_model& ref, const std::string& kind, runner_process::deadline until,
                                 const seed_trail& trail, nlohmann::json& stress) {
  const auto set = make_stress_set(task, kind, trail.last_inputs,
                                   [&](const std::vector<torch::Tensor>& in) { return ref.run(in); });
  trace_phase("verify: stress set drawn, reference run");
  nlohmann::json entry{{"kind", kind}};
  if (!set.skipped.empty()) {
    entry["skipped"] = set.skipped;
    stress.push_back(entry);
    return nullptr;
  }
  entry["scale"] = set.scale;
  const std::string where = kind == "large_magnitude"
                                ? "on inputs scaled ×" + std::to_string(static_cast<long long>(set.scale))
                                : "on inputs up to " + std::to_string(set.scale) + " in magnitude";
  auto call = guarded_call(dev, runner, *trail.frame, with_params(set.inputs, ref), until);
  if (!call.check.empty()) {
    call.reason += " (stress set " + kind + ", " + where + ")";
    auto r = call_failure(call);
    r["seeds"] = trail.seeds;
    return r;
  }
  entry["outputs"] = nlohmann::json::array();
  for (std::size_t i = 0; i < set.expected.size(); ++i) {
    const auto tol = engine::tolerance_for(dtype_name(set.expected[i].scalar_type()), task, i);
    const auto c = compare_stressed(call.outputs[i], set.expected[i], tol);
    entry["outputs"].push_back(c.to_json());
    if (c.ok) continue;
    auto r = fail("fail", "stress_" + kind,
                  engine::output_label(task, i) + " is wrong " + where + " (beyond the task's own distribution; "
                  "the reference stays finite there): " + c.reason);
    r["seeds"] = trail.seeds;
    entry["ok"] = false;
    stress.push_back(entry);
    r["stress"] = stress;
    return r;
  }
  entry["ok"] = true;
  stress.push_back(entry);
  return nullptr;
}

}  // namespace

nlohmann::json judge::verify(const engine::task_spec& task, runner_process& runner, reference_model& ref,
                             std::uint64_t seed_base, deadline until) {
  seed_trail trail;
  for (int s = 0; s < task.seeds; ++s)
    if (auto bad = verify_seed(dev_, task, runner, ref, seed_base + static_cast<std::uint64_t>(s), until, trail);
        !bad.is_null())
      return bad;
  // Then beyond the task's distribution (stress_inputs.h).
  nlohmann::json stress = nlohmann::json::array();
  for (const auto& kind : engine::stress_kinds())
    if (auto bad = verify_stress_set(dev_, task, runner, ref, kind, until, trail, stress); !bad.is_null()) return bad;
  return {{"verdict", "pass"}, {"seeds", trail.seeds}, {"stress", stress}};
}

}  // namespace kblaster::harness
