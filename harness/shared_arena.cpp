// Arena allocation (the CUDA virtual memory API exported as a file descriptor, or memfd + mmap) and the call frame's layout.
#include "harness/shared_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#ifdef KBLASTER_HARNESS_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace kblaster::harness {
std::size_t aligned(std::size_t n) { return (n + arena_alignment - 1) / arena_alignment * arena_alignment; }

shared_arena::shared_arena(const device_context& dev, std::size_t bytes) : cuda_(dev.is_cuda()), bytes_(aligned(bytes)) {
  if (bytes_ == 0) bytes_ = arena_alignment;
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    // Physical memory of the driver's recommended granularity (2 MiB pages on an H100) made with
    // the virtual memory API and exported as a file descriptor, which the runner maps the same way.
    // A cudaMalloc exported with a legacy IPC handle and opened by the runner ran short memory-bound
    // kernels 20-45 % slower than the same kernel on the runner's own memory (a 7 us stencil read
    // 10 us in the harness, on an H100: docs/results/capture-gpu.md), so that the harness's
    // figure for a captured kernel was not the program's. Outside LibTorch's caching allocator,
    // whose cached blocks (several GB at KernelBench sizes) go back to the driver first.
    dev.release_cached_memory();
    int ordinal = 0;
    cudaGetDevice(&ordinal);
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    std::size_t granularity = 0;
    const auto check = [&](CUresult r, const char* what) {
      if (r == CUDA_SUCCESS) return;
      const char* name = nullptr;
      cuGetErrorString(r, &name);
      release();
      throw std::runtime_error(std::string(what) + " for the call's shared memory (" + std::to_string(bytes_ >> 20) +
                               " MiB): " + (name ? name : "unknown error") + "; " + std::to_string(dev.free_bytes() >> 20) +
                               " MiB free on the device");
    };
    check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    bytes_ = (bytes_ + granularity - 1) / granularity * granularity;
    check(cuMemCreate(&allocation_, bytes_, &prop, 0), "allocating (cuMemCreate)");
    created_ = true;
    CUdeviceptr va = 0;
    check(cuMemAddressReserve(&va, bytes_, granularity, 0, 0), "reserving addresses");
    base_ = reinterpret_cast<void*>(va);
    check(cuMemMap(va, bytes_, 0, allocation_, 0), "mapping");
    mapped_ = true;
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(cuMemSetAccess(va, bytes_, &access, 1), "cuMemSetAccess");
    check(cuMemExportToShareableHandle(&fd_, allocation_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "exporting");
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);  // it goes to a runner over its socket, never by inheritance
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

shared_arena::~shared_arena() { release(); }

void shared_arena::release() {
#ifdef KBLASTER_HARNESS_CUDA
  if (cuda_) {
    const auto va = reinterpret_cast<CUdeviceptr>(base_);
    if (mapped_) cuMemUnmap(va, bytes_);
    if (base_) cuMemAddressFree(va, bytes_);
    if (created_) cuMemRelease(allocation_);
    if (fd_ >= 0) ::close(fd_);
    mapped_ = created_ = false;
    base_ = nullptr;
    fd_ = -1;
    return;
  }
#endif
  if (base_) ::munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

torch::Tensor shared_arena::view(std::size_t offset, c10::IntArrayRef sizes, torch::ScalarType type) const {
  const auto opts = torch::TensorOptions().dtype(type).device(cuda_ ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU));
  return torch::from_blob(static_cast<char*>(base_) + offset, sizes, opts);
}

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
