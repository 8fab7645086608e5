// The reference: a TorchScript module with its weights, TorchScript source compiled at run
// time, or another kernel with the same ABI. Produces the expected outputs and is timed.
#pragma once

#include "engine/task/task.h"
#include "harness/candidate.h"
#include "harness/device.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::harness {

/// A loaded reference. Parameters and buffers (module references) follow the inputs in the
/// candidate's argument list, in named_parameters() then named_buffers() order.
class reference_model {
 public:
  /// Loads the task's reference onto `dev`. `kernel_library` is the built reference kernel for
  /// reference_kind::kernel. Throws std::runtime_error with the reason.
  reference_model(const engine::task_spec& task, device_context& dev, const std::string& kernel_library);

  /// The module's parameters then buffers (empty for source and kernel references).
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  /// Runs the reference eagerly on `inputs` (not modified) and returns its outputs.
  std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& inputs);
  /// A TorchScript reference as one timed call on prepared inputs (for the timer; outputs
  /// dropped). A kernel reference is timed in a runner instead.
  void run_for_timing(const std::vector<torch::Tensor>& inputs);

 private:
  engine::task_spec task_;
  device_context& dev_;
  std::optional<torch::jit::Module> module_;
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
  std::unique_ptr<candidate_library> kernel_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> run_script(const std::vector<torch::Tensor>& args);
};

/// Flattens a forward() result (a tensor, or a tuple/list of tensors) into tensors.
std::vector<torch::Tensor> flatten_outputs(const c10::IValue& v);

}  // namespace kblaster::harness
