// Tensors for one call: inputs generated from the task's specs and a seed, outputs allocated
// from the reference's shapes (poisoned with NaN and followed by a canary), and DLPack views of
// both for the candidate's kb_forward.
#pragma once

#include "engine/task/task.h"

#include <dlpack/dlpack.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kblaster::harness {

/// The scalar type named in task files ("float32" -> torch::kFloat32). Throws on unknown names.
torch::ScalarType scalar_type(const std::string& dtype);
/// The task-file name of a scalar type.
std::string dtype_name(torch::ScalarType t);

/// Fills `t` with the canary pattern that follows every output (-123, 0xA5 bytes, true).
torch::Tensor canary_pattern(const torch::Tensor& t);
/// Fills `t` with the poison an output holds before a call (NaN, or a sentinel for integers).
torch::Tensor poison_value(torch::Tensor t);

/// Whether an input is drawn at random from its init (randn, uniform, randint; not a file).
bool is_random_init(const engine::input_spec& in);
/// Values of `in`'s init in `shape` (which may hold many copies of in.shape) from `gen`.
torch::Tensor draw_values(const engine::input_spec& in, c10::IntArrayRef shape, at::Generator& gen,
                          const torch::TensorOptions& opts);

/// Fresh inputs for `seed`, on `device`, contiguous.
std::vector<torch::Tensor> make_inputs(const engine::task_spec& task, std::uint64_t seed, torch::Device device);

/// Output buffers: each a view of the head of a larger allocation whose tail holds a canary.
struct output_buffers {
  std::vector<torch::Tensor> outputs;  // what the candidate must fill (poisoned before the call)
  std::vector<torch::Tensor> storage;  // output + canary, flat
  std::vector<std::int64_t> canary_elems;
  /// Fills outputs with NaN (or a sentinel for integers) and the canaries with their pattern.
  void poison();
  /// Index of the first output whose canary was overwritten, or -1.
  int damaged_canary() const;
};

/// Buffers shaped like `like` (the reference's outputs), on the same device.
output_buffers make_outputs(const std::vector<torch::Tensor>& like);
/// Elements of canary after an output shaped like `like`.
std::int64_t canary_elements(const torch::Tensor& like);
/// Buffers over flat storage the caller allocated (storage[i] holds like[i].numel() plus
/// canary_elements(like[i]) elements of like[i]'s dtype), poisoned.
output_buffers outputs_over(std::vector<torch::Tensor> storage, const std::vector<torch::Tensor>& like);

/// The DLPack type of a scalar type. Throws for types that cannot cross the kb_forward ABI.
DLDataType dl_dtype(torch::ScalarType t);

/// DLTensor views over tensors, owning the shape and stride arrays they point to.
class dl_views {
 public:
  explicit dl_views(const std::vector<torch::Tensor>& tensors);
  DLTensor* data() { return views_.data(); }
  int size() const { return static_cast<int>(views_.size()); }
  /// Index of the first view the callee changed (pointer, shape, strides, dtype), or -1.
  int changed() const;

 private:
  std::vector<std::vector<std::int64_t>> shapes_, strides_, shape_copies_, stride_copies_;
  std::vector<DLTensor> views_, original_;
};

/// True when the bytes of a and b are identical (NaN payloads included).
bool same_bits(const torch::Tensor& a, const torch::Tensor& b);

/// True when the memory of a and b overlaps.
bool overlaps(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace kblaster::harness
