// Arena allocation (cudaMalloc + IPC handle, or memfd + mmap) and the call frame's layout.
#include "harness/shared_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#ifdef KBLASTER_HARNESS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kblaster::harness {
std::size_t aligned(std::size_t n) { return (n + arena_alignment - 1) / arena_alignment * arena_alignment; }

shared_arena::shared_arena(const device_context& dev, std::size_t bytes) : cuda_(dev.is_cuda()), bytes_(aligned(bytes)) {
  if (bytes_ == 0) bytes_ = arena_alignment;
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    // The arena is a plain cudaMalloc (its IPC handle needs one), outside LibTorch's caching
    // allocator, whose cached blocks (the inputs' and the reference's temporaries, several GB at
    // KernelBench sizes) would otherwise leave no room for it: they go back to the driver first.
    dev.release_cached_memory();
    if (auto e = cudaMalloc(&base_, bytes_); e != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free allocation error before the message is built
      throw std::runtime_error(std::string("allocating the call's shared memory (") + std::to_string(bytes_ >> 20) +
                               " MiB): " + cudaGetErrorString(e) + "; " + std::to_string(dev.free_bytes() >> 20) +
                               " MiB free on the device");
    }
    cudaIpcMemHandle_t h;
    static_assert(sizeof(h) == sizeof(handle_));
    if (auto e = cudaIpcGetMemHandle(&h, base_); e != cudaSuccess) {
      cudaFree(base_);
      throw std::runtime_error(std::string("cudaIpcGetMemHandle: ") + cudaGetErrorString(e));
    }
    std::memcpy(handle_, &h, sizeof(h));
    return;
  }
#endif
  fd_ = ::memfd_create("kblaster-call", MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd_);
    throw std::runtime_error(std::string("sizing the call's shared memory: ") + std::strerror(errno));
  }
  base_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base_ == MAP_FAILED) {
    ::close(fd_);
    throw std::runtime_error(std::string("mapping the call's shared memory: ") + std::strerror(errno));
  }
}

shared_arena::~shared_arena() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    cudaFree(base_);
    return;
  }
#endif
  ::munmap(base_, bytes_);
  ::close(fd_);
}

torch::Tensor shared_arena::view(std::size_t offset, c10::IntArrayRef sizes, torch::ScalarType type) const {
  const auto opts = torch::TensorOptions().dtype(type).device(cuda_ ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU));
  return torch::from_blob(static_cast<char*>(base_) + offset, sizes, opts);
}

void shared_arena::ipc_handle(unsigned char (&out)[64]) const { std::memcpy(out, handle_, sizeof(handle_)); }

std::vector<int> initial_inputs(const engine::task_spec& task) {
  std::vector<int> from;
  for (const auto& o : task.outputs) from.push_back(o.initial_from);
  return from;
}

call_frame::call_frame(const device_context& dev, const std::vector<torch::Tensor>& args,
                       const std::vector<torch::Tensor>& like_outputs, std::vector<int> initial_from)
    : initial_from_(std::move(initial_from)) {
  if (args.size() + like_outputs.size() > static_cast<std::size_t>(runner::max_tensors))
    throw std::runtime_error("more than " + std::to_string(runner::max_tensors) + " tensors in one call");
  std::vector<std::size_t> offsets;
  std::size_t end = 0;
  for (const auto& a : args) {
    offsets.push_back(end);
    end = aligned(end + a.nbytes());
  }
  for (const auto& o : like_outputs) {
    offsets.push_back(end);
    end = aligned(end + static_cast<std::size_t>(o.numel() + canary_elements(o)) * o.element_size());
  }
  arena_ = std::make_unique<shared_arena>(dev, end);
  std::size_t k = 0;
  for (const auto& a : args) inputs_.push_back(arena_->view(offsets[k++], a.sizes(), a.scalar_type()));
  std::vector<torch::Tensor> storage;
  for (const auto& o : like_outputs)
    storage.push_back(arena_->view(offsets[k++], {o.numel() + canary_elements(o)}, o.scalar_type()));
  outputs_ = outputs_over(std::move(storage), like_outputs);

  k = 0;
  const auto describe = [&](const torch::Tensor& t) {
    if (t.dim() > runner::max_dims)
      throw std::runtime_error("a tensor of " + std::to_string(t.dim()) + " dimensions (the runner takes up to " +
                               std::to_string(runner::max_dims) + ")");
    runner::tensor_desc d;
    d.offset = offsets[k++];
    d.ndim = static_cast<std::int32_t>(t.dim());
    for (int i = 0; i < t.dim(); ++i) {
      d.shape[i] = t.size(i);
      d.strides[i] = t.stride(i);
    }
    const auto type = dl_dtype(t.scalar_type());
    d.code = type.code;
    d.bits = type.bits;
    d.lanes = type.lanes;
    descs_.push_back(d);
  };
  for (const auto& t : inputs_) describe(t);
  for (const auto& t : outputs_.outputs) describe(t);
}

void call_frame::load(const std::vector<torch::Tensor>& args) {
  for (std::size_t i = 0; i < inputs_.size(); ++i) inputs_[i].copy_(args[i]);
  outputs_.poison();
  for (std::size_t j = 0; j < initial_from_.size() && j < outputs_.outputs.size(); ++j)
    if (const int i = initial_from_[j]; i >= 0 && static_cast<std::size_t>(i) < inputs_.size())
      outputs_.outputs[j].view({-1}).copy_(inputs_[static_cast<std::size_t>(i)].view({-1}));
}

}  // namespace kblaster::harness
