// Building a candidate for kblaster-harness: a `.cu` becomes a shared object through the nvcc
// driver (GPU path); a `.cpp` becomes one through the host C++ compiler (CPU path, the same
// kb_forward ABI with the stream unused). Neither includes LibTorch.
#pragma once

#include "engine/toolchain/nvcc_driver.h"

#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// The outcome of building one candidate.
struct candidate_build {
  bool ok = false;
  bool from_cache = false;
  std::string library;  // the .so to give the harness
  std::string log;      // compiler output
  std::vector<diagnostic> diagnostics;
  double seconds = 0;
  bool cancelled = false;  // stopped: the compiler was killed, nothing was cached
};

/// True for sources built as host code (.cpp, .cc, .cxx): the CPU path.
bool is_host_source(const std::string& path);

/// Where dlpack/dlpack.h lives when not on the default include path: $KBLASTER_DLPACK_INCLUDE,
/// or empty.
std::string dlpack_include_dir();

/// Builds `source`; `.cu` through `nvcc` (for `arch`, empty: the driver's choice), host sources
/// with $CXX or g++ into the same cache directory. Never throws for compiler errors.
/// A stop kills the compiler (and what it started) and the build comes back cancelled.
candidate_build build_candidate(const std::string& source, const std::string& arch, nvcc_driver& nvcc,
                                bool use_cache, std::stop_token stop);

/// Builds a host source without an nvcc (CPU-only machines). Never throws for compiler errors.
candidate_build build_host_candidate(const std::string& source, const std::string& cache_dir, bool use_cache,
                                     std::stop_token stop);

}  // namespace kblaster::engine
