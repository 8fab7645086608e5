// Comparing a candidate's output with the reference's: element-wise tolerance (allclose), a check
// relative to the reference's magnitude (relative L2 error), NaN and constant-output detection.
#pragma once

#include "engine/task/task.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace kblaster::harness {

/// The figures of one output on one seed.
struct comparison {
  bool ok = true;
  std::string reason;                // why not ok; empty when ok
  std::int64_t elements = 0;
  std::int64_t mismatches = 0;       // elements outside atol + rtol * |ref|
  std::int64_t first_mismatch = -1;  // flat index
  double max_abs_error = 0;
  double max_rel_error = 0;
  double relative_l2_error = 0;      // ||out - ref|| / ||ref||
  std::int64_t unwritten = 0;        // NaN where the reference is finite (the poison survived)
  std::int64_t first_unwritten = -1;
  nlohmann::json to_json() const;
};

/// How the figures are gathered: `automatic` reads both tensors once on the GPU where they live
/// there in a floating dtype (compare_device.h), else chunk by chunk with LibTorch's operations;
/// `chunks` always the latter (the GPU test holds the two to the same figures).
enum class compare_route { automatic, chunks };

/// Compares `out` with `ref` (same shape) under `tol`. The magnitude check allows a relative L2
/// error of max(10 rtol, 1e-3): it catches outputs that pass allclose only because the values
/// are small next to atol (e.g. all zeros, or half the right answer).
comparison compare_output(const torch::Tensor& out, const torch::Tensor& ref, const engine::tolerance& tol,
                          compare_route route = compare_route::automatic);

/// The comparison of a stress set (stress_inputs.h): not element by element, but a non-finite
/// value where the reference is finite, or a relative L2 error over max(10 rtol, 1e-3), fails.
comparison compare_stressed(const torch::Tensor& out, const torch::Tensor& ref, const engine::tolerance& tol);

/// "[3, 17]" for flat index 3*cols+17 of a tensor of `sizes`.
std::string index_string(std::int64_t flat, c10::IntArrayRef sizes);

}  // namespace kblaster::harness
