// Loading and running references.
#include "harness/reference.h"

#include "harness/tensors.h"

#include <torch/csrc/jit/api/compilation_unit.h>

namespace kblaster::harness {

std::vector<torch::Tensor> flatten_outputs(const c10::IValue& v) {
  std::vector<torch::Tensor> out;
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) {
      auto sub = flatten_outputs(e);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) {
      auto sub = flatten_outputs(e);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else {
    throw std::runtime_error("the reference returned " + v.tagKind() + "; it must return tensors");
  }
  return out;
}

reference_model::reference_model(const engine::task_spec& task, device_context& dev, const std::string& kernel_library)
    : task_(task), dev_(dev) {
  switch (task.reference.kind) {
    case engine::reference_kind::torchscript_module: {
      try {
        module_ = torch::jit::load(task.reference.path, dev.torch_device());
      } catch (const c10::Error& e) {
        throw std::runtime_error("cannot load the TorchScript module " + task.reference.path + ": " + e.what_without_backtrace());
      }
      module_->eval();
      for (const auto& p : module_->named_parameters(true)) params_.push_back(p.value.detach().contiguous());
      for (const auto& b : module_->named_buffers(true)) params_.push_back(b.value.detach().contiguous());
      break;
    }
    case engine::reference_kind::torchscript_source:
      try {
        unit_ = torch::jit::compile(task.reference.source);
        unit_->get_function("forward");
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the reference source does not compile: ") + e.what());
      }
      break;
    case engine::reference_kind::kernel:
      if (kernel_library.empty()) throw std::runtime_error("the reference is a kernel but no built reference library was given");
      try {
        kernel_ = std::make_unique<candidate_library>(kernel_library, true, false);  // the task's own code
      } catch (const candidate_rejected& e) {
        throw std::runtime_error(std::string("reference kernel: ") + e.what());
      }
      if (task.outputs.empty()) throw std::runtime_error("a kernel reference needs the task's 'outputs' (shapes and dtypes)");
      break;
  }
}

std::vector<torch::Tensor> reference_model::run_script(const std::vector<torch::Tensor>& args) {
  torch::NoGradGuard no_grad;
  std::vector<c10::IValue> stack(args.begin(), args.end());
  if (module_) return flatten_outputs(module_->forward(stack));
  return flatten_outputs(unit_->get_function("forward")(stack));
}

std::vector<torch::Tensor> reference_model::run(const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> args;
  for (const auto& t : inputs) args.push_back(t.clone());
  if (!kernel_) {
    auto outs = run_script(args);
    for (auto& o : outs) o = o.detach().contiguous();
    dev_.sync_device();
    return outs;
  }
  // A kernel reference fills buffers shaped by the task's 'outputs'.
  std::vector<torch::Tensor> outs;
  // An output the kernel updates in place starts from its input's contents, as the candidate's does.
  for (const auto& o : task_.outputs)
    outs.push_back(o.initial_from >= 0 && static_cast<std::size_t>(o.initial_from) < inputs.size()
                       ? inputs[static_cast<std::size_t>(o.initial_from)].reshape(o.shape).clone()
                       : torch::empty(o.shape, torch::TensorOptions().dtype(scalar_type(o.dtype)).device(dev_.torch_device())));
  for (const auto& p : params_) args.push_back(p);
  dl_views in(args), out(outs);
  const int rc = kernel_->forward()(in.data(), in.size(), out.data(), out.size(), dev_.stream());
  dev_.sync_device();
  if (rc != 0) throw std::runtime_error("the reference kernel returned " + std::to_string(rc));
  return outs;
}

void reference_model::run_for_timing(const std::vector<torch::Tensor>& inputs) {
  // A kernel reference is timed in a runner of its own, as a candidate (judge_time.cpp), never here.
  if (kernel_) throw std::logic_error("a kernel reference is timed in a runner, not in the judge");
  torch::NoGradGuard no_grad;
  std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
  if (module_) module_->forward(stack);
  else unit_->get_function("forward")(stack);
}

}  // namespace kblaster::harness
