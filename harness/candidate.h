// A compiled candidate (or a reference kernel): a shared object exposing kb_forward, checked for
// forbidden libraries before it is loaded.
#pragma once

#include <dlpack/dlpack.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace kblaster::harness {

/// The ABI: inputs (then the reference's parameters and buffers), outputs, the stream
/// (cudaStream_t on the GPU path, unused on the CPU). Returns 0 on success.
using kb_forward_fn = int (*)(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* stream);

/// A rejection before the candidate ever runs: `check` is forbidden_library, screening or load.
class candidate_rejected : public std::runtime_error {
 public:
  candidate_rejected(std::string check, const std::string& what) : std::runtime_error(what), check_(std::move(check)) {}
  const std::string& check() const { return check_; }

 private:
  std::string check_;
};

/// The checks made before a candidate is loaded anywhere: its imports against the forbidden
/// libraries (unless `allow_libraries`) and the static screening (candidate_screen.h; `screen` is
/// off only in tests of the sandbox behind it). Throws candidate_rejected.
void check_candidate(const std::string& path, bool allow_libraries, bool screen = true);

/// A loaded shared object. Never unloaded: a candidate may have left a thread running, and
/// unmapping its code under that thread would crash the harness for the wrong reason.
class candidate_library {
 public:
  /// Loads `path` after checking its imports for libraries (unless `allow_libraries`) and
  /// screening it (candidate_screen.h; `screen` is off only in tests of the sandbox behind it).
  /// Throws candidate_rejected.
  candidate_library(const std::string& path, bool allow_libraries, bool screen = true);
  kb_forward_fn forward() const { return forward_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* handle_ = nullptr;
  kb_forward_fn forward_ = nullptr;
};

}  // namespace kblaster::harness
