// The judge's replies shared by its request files (judge.cpp, judge_verify.cpp, judge_time.cpp,
// judge_profile.cpp): a failure as a verdict, a failed guarded call as one.
#pragma once

#include "harness/guarded_call.h"
#include "harness/reference.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace kblaster::harness {

/// {"verdict", "check", "reason"}: a verdict other than pass.
inline nlohmann::json fail(const std::string& verdict, const std::string& check, const std::string& reason) {
  return {{"verdict", verdict}, {"check", check}, {"reason", reason}};
}

/// A failed guarded call as a reply: a runner that did not survive is an error of the
/// candidate's making (as a harness crash was before the split), a failed guard a fail.
inline nlohmann::json call_failure(const call_result& c) {
  const bool error = c.runner_lost || c.check == "exception" || c.check == "out_of_memory";
  return fail(error ? "error" : "fail", c.check, c.reason);
}

/// The runner's reply to mapping a call's memory, as a failure; null when it mapped.
inline nlohmann::json map_failure(const runner_reply& m) {
  if (!m.replied()) return call_failure(lost_call(m, "mapping memory"));
  if (m.body.result != runner::status::ok)
    return fail("error", "runner", "the runner could not map the call's memory: " + runner_message(m.body));
  return nullptr;
}

/// A call's arguments: the task's inputs, then the reference's parameters.
inline std::vector<torch::Tensor> with_params(std::vector<torch::Tensor> inputs, const reference_model& ref) {
  for (const auto& p : ref.parameters()) inputs.push_back(p);
  return inputs;
}

}  // namespace kblaster::harness
