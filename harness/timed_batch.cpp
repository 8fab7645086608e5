// The timed batch's memory: layout, renewal between batches, the judge's copies and canaries.
#include "harness/timed_batch.h"

#include "harness/tensors.h"
#include "harness/timing.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>

namespace kblaster::harness {
namespace {

// How far a perturbed element moves: 2^-6 of itself at most, well inside what fp16 resolves and
// small enough that an input read as a structure (a threshold, a coordinate) keeps its shape.
constexpr double perturbation = 1.0 / 64;

}  // namespace

std::size_t timed_batch::slot_bytes(const std::vector<torch::Tensor>& args, const std::vector<torch::Tensor>& like_outputs) {
  std::size_t bytes = 0;
  for (const auto& a : args) bytes += aligned(a.nbytes()) + a.nbytes();  // its arena share and the judge's copy
  for (const auto& o : like_outputs) bytes += aligned(static_cast<std::size_t>(o.numel() + canary_elements(o)) * o.element_size());
  return std::max<std::size_t>(bytes, 1);
}

int slots_that_fit(const device_context& dev, const std::vector<torch::Tensor>& args,
                   const std::vector<torch::Tensor>& like_outputs) {
  std::size_t budget = timing_rules::cpu_memory_bytes;
  if (dev.is_cuda()) {
    dev.release_cached_memory();
    budget = std::min<std::size_t>(dev.free_bytes() / timing_rules::gpu_memory_divisor, timing_rules::gpu_memory_cap_bytes);
  }
  const auto fit = budget / timed_batch::slot_bytes(args, like_outputs);
  return static_cast<int>(std::clamp<std::size_t>(fit, 1, runner::max_batch_calls));
}

int calls_per_batch(double call_ms, double batch_ms, int slots) {
  if (!(call_ms > 0) || call_ms >= batch_ms) return 1;
  // A power of two: candidates of about the same speed get batches of the same size, so that the
  // reference timed for one (in batches of that size) serves the next (judge_time.cpp).
  int calls = 1;
  while (calls * call_ms < batch_ms && calls < slots) calls *= 2;
  return std::clamp(calls, 1, std::max(slots, 1));
}

timed_batch::timed_batch(const device_context& dev, const engine::task_spec& task, const std::vector<torch::Tensor>& args,
                         const std::vector<torch::Tensor>& like_outputs, int slots)
    : slots_(std::max(slots, 1)), device_(dev.torch_device()), specs_(task.inputs) {
  if (args.size() + like_outputs.size() > static_cast<std::size_t>(runner::max_tensors))
    throw std::runtime_error("more than " + std::to_string(runner::max_tensors) + " tensors in one call");
  std::size_t end = 0;
  const auto place = [&](const torch::Tensor& t, std::int64_t canary) {
    block b;
    b.offset = end;
    b.elements = t.numel();
    b.canary = canary;
    b.shape = t.sizes().vec();
    b.type = t.scalar_type();
    b.stride = aligned(static_cast<std::size_t>(b.elements + canary) * t.element_size());
    end += b.stride * static_cast<std::size_t>(slots_);
    return b;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    args_.push_back(place(args[i], 0));
    base_.push_back(args[i].contiguous());
    renewal r = renewal::kept;
    if (i < specs_.size()) {
      if (is_random_init(specs_[i])) r = renewal::drawn;
      else if (!specs_[i].file.empty() && args[i].is_floating_point()) r = renewal::perturbed;
    }
    renew_.push_back(r);
  }
  for (const auto& o : like_outputs) outputs_.push_back(place(o, canary_elements(o)));
  for (std::size_t j = 0; j < like_outputs.size(); ++j)
    initial_from_.push_back(j < task.outputs.size() ? task.outputs[j].initial_from : -1);
  arena_ = std::make_unique<shared_arena>(dev, end);

  const auto describe = [&](const block& b) {
    if (b.shape.size() > static_cast<std::size_t>(runner::max_dims))
      throw std::runtime_error("a tensor of " + std::to_string(b.shape.size()) + " dimensions (the runner takes up to " +
                               std::to_string(runner::max_dims) + ")");
    runner::tensor_desc d;
    d.offset = b.offset;
    d.ndim = static_cast<std::int32_t>(b.shape.size());
    std::int64_t stride = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      d.shape[i] = b.shape[static_cast<std::size_t>(i)];
      d.strides[i] = stride;
      stride *= std::max<std::int64_t>(d.shape[i], 1);
    }
    const auto type = dl_dtype(b.type);
    d.code = type.code;
    d.bits = type.bits;
    d.lanes = type.lanes;
    first_.push_back(d);
    strides_.push_back(b.stride);
  };
  for (const auto& b : args_) describe(b);
  for (const auto& b : outputs_) describe(b);

  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (renew_[i] == renewal::kept) {
      judge_.emplace_back();
      continue;
    }
    judge_.push_back(torch::empty({slots_, args_[i].elements}, base_[i].options()));
  }
}

torch::Tensor timed_batch::arena_block(const block& b, std::int64_t width) const {
  const auto element = static_cast<std::int64_t>(c10::elementSize(b.type));
  return arena_->view(b.offset, {slots_, static_cast<std::int64_t>(b.stride) / element}, b.type).narrow(1, 0, width);
}

void timed_batch::refresh(std::uint64_t seed, int k) {
  torch::NoGradGuard no_grad;
  k = std::clamp(k, 1, slots_);
  // The device's generator, seeded here (the harness handles one request at a time), or a CPU
  // generator of this batch's own.
  at::Generator gen = device_.is_cuda() ? at::globalContext().defaultGenerator(device_)
                                        : at::make_generator<at::CPUGeneratorImpl>(seed);
  if (device_.is_cuda()) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  }
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto& b = args_[i];
    auto to = arena_block(b, b.elements).narrow(0, 0, k);
    switch (renew_[i]) {
      case renewal::kept: to.copy_(base_[i].reshape({1, b.elements}).expand({k, b.elements})); continue;
      case renewal::drawn: {
        const bool floating = c10::isFloatingType(b.type);
        const auto opts = torch::TensorOptions().dtype(floating ? b.type : torch::kFloat32).device(device_);
        judge_[i].narrow(0, 0, k).copy_(draw_values(specs_[i], {k, b.elements}, gen, opts));
        break;
      }
      case renewal::perturbed: {
        const auto opts = torch::TensorOptions().dtype(b.type).device(device_);
        auto factor = at::rand({k, b.elements}, gen, opts).mul_(2 * perturbation).add_(1 - perturbation);
        judge_[i].narrow(0, 0, k).copy_(base_[i].reshape({1, b.elements}) * factor);
        break;
      }
    }
    to.copy_(judge_[i].narrow(0, 0, k));
  }
  for (std::size_t j = 0; j < outputs_.size(); ++j) {
    const auto& b = outputs_[j];
    auto whole = arena_block(b, b.elements + b.canary).narrow(0, 0, k);
    canary_pattern(whole.narrow(1, b.elements, b.canary));
    auto out = whole.narrow(1, 0, b.elements);
    if (const int from = initial_from_[j]; from >= 0 && static_cast<std::size_t>(from) < args_.size())
      out.copy_(arena_block(args_[static_cast<std::size_t>(from)], b.elements).narrow(0, 0, k));
    else
      poison_value(out);
  }
}

std::vector<torch::Tensor> timed_batch::args(int s) const {
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < args_.size(); ++i)
    out.push_back(renew_[i] == renewal::kept ? base_[i] : judge_[i][s].view(args_[i].shape));
  return out;
}

std::vector<torch::Tensor> timed_batch::arena_args(int s) const {
  std::vector<torch::Tensor> out;
  for (const auto& b : args_) out.push_back(arena_block(b, b.elements)[s].view(b.shape));
  return out;
}

std::vector<torch::Tensor> timed_batch::outputs(int s) const {
  std::vector<torch::Tensor> out;
  for (const auto& b : outputs_) out.push_back(arena_block(b, b.elements)[s].view(b.shape));
  return out;
}

int timed_batch::damaged_canary(int k) const {
  k = std::clamp(k, 1, slots_);
  for (std::size_t j = 0; j < outputs_.size(); ++j) {
    const auto& b = outputs_[j];
    auto tail = arena_block(b, b.elements + b.canary).narrow(0, 0, k).narrow(1, b.elements, b.canary);
    const auto seen = tail.contiguous();
    if (!same_bits(seen, canary_pattern(torch::empty_like(seen)))) return static_cast<int>(j);
  }
  return -1;
}

}  // namespace kblaster::harness
