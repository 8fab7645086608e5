// The nvcc driver: finds nvcc, picks the target architecture, compiles a source to an object,
// a shared object or an executable with -lineinfo and ptxas -v, and returns structured
// diagnostics and per-kernel resources. Builds are cached by source hash, flags and nvcc
// version, bounded in time, and at most N run at once.
#pragma once

#include "engine/toolchain/nvcc_diagnostics.h"
#include "engine/toolchain/ptxas_parser.h"

#include <chrono>
#include <memory>
#include <optional>
#include <semaphore>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// What to build.
enum class output_kind { object, shared_object, executable };

/// Options of one compilation.
struct nvcc_options {
  std::string arch;  // "sm_90"; empty: the local GPU's, else "sm_90"
  std::vector<std::string> extra_flags;
  bool lineinfo = true;
  std::chrono::seconds timeout{180};
  bool use_cache = true;
  /// Compile inside the sandbox (model-written sources: an #include of ~/.ssh/id_rsa would put
  /// the key into the diagnostics the model reads). Only the cache folder is writable.
  bool sandboxed = false;
  /// A stop kills nvcc (its process group) and the build comes back cancelled, uncached.
  std::stop_token stop;
  /// Keep the PTX nvcc generates on the way (-keep), beside the build: what the compiler made of
  /// each entry's __launch_bounds__, macros expanded (`.maxntid`), fills kernel_resources.
  bool keep_ptx = false;
};

/// The outcome of one compilation.
struct compile_result {
  bool ok = false;
  bool from_cache = false;
  bool timed_out = false;
  bool cancelled = false;    // stopped through nvcc_options::stop
  std::string output_path;   // the built file (in the cache directory)
  std::string arch;
  std::vector<std::string> command;
  std::vector<diagnostic> diagnostics;
  std::vector<kernel_resources> resources;  // from ptxas -v (and the PTX, with keep_ptx)
  std::string ptx_path;      // the kept PTX (keep_ptx); empty when none
  std::string log;           // nvcc's stdout and stderr
  double seconds = 0;
};

/// Path of nvcc from $PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; nullopt when absent.
std::optional<std::string> find_nvcc();

/// The local GPU's architecture ("sm_90") from nvidia-smi; empty when there is no GPU.
std::string detect_local_arch();

/// Compiles CUDA sources. Thread-safe: at most `max_parallel` nvcc processes run at once.
class nvcc_driver {
 public:
  /// Uses `nvcc_path`; the cache lives in `cache_dir` (created when missing).
  nvcc_driver(std::string nvcc_path, std::string cache_dir, int max_parallel = 2);

  /// `nvcc --version`'s release line, e.g. "Cuda compilation tools, release 13.0, V13.0.88".
  const std::string& version();
  /// The nvcc executable this driver runs.
  const std::string& path() const { return nvcc_; }

  /// The architecture a build with `configured` uses: configured, else the local GPU's, else sm_90.
  std::string target_arch(const std::string& configured);

  /// Compiles `source_path`. Never throws for compiler errors: they come back as diagnostics.
  compile_result compile(const std::string& source_path, output_kind kind, const nvcc_options& options = {});

  /// The default cache directory: $XDG_CACHE_HOME/kblaster/nvcc or ~/.cache/kblaster/nvcc.
  static std::string default_cache_dir();

 private:
  std::string nvcc_;
  std::string cache_dir_;
  std::string version_;
  std::optional<std::string> local_arch_;
  std::unique_ptr<std::counting_semaphore<64>> slots_;
};

}  // namespace kblaster::engine
