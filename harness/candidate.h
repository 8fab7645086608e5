// A compiled candidate (or a reference kernel): a shared object exposing kb_forward, checked for
// forbidden libraries before it is loaded.
#pragma once

#include <dlpack/dlpack.h>

#include <stdexcept>
#include <string>

namespace kblaster::harness {

/// The ABI: inputs (then the reference's parameters and buffers), outputs, the stream
/// (cudaStream_t on the GPU path, unused on the CPU). Returns 0 on success.
using kb_forward_fn = int (*)(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* stream);

/// A rejection before the candidate ever runs (forbidden library, missing entry point).
class candidate_rejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A loaded shared object. Never unloaded: a candidate may have left a thread running, and
/// unmapping its code under that thread would crash the harness for the wrong reason.
class candidate_library {
 public:
  /// Loads `path` after checking its imports (unless `allow_libraries`). Throws candidate_rejected.
  candidate_library(const std::string& path, bool allow_libraries);
  kb_forward_fn forward() const { return forward_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* handle_ = nullptr;
  kb_forward_fn forward_ = nullptr;
};

}  // namespace kblaster::harness
