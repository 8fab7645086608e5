// What a KernelBench import's output depends on, named so that an import done once can be reused:
// the problem file's bytes, the exporter's bytes, the PyTorch build that runs it, the device it
// exports and times on, and the options that change what it writes. The import cache
// (import_cache.h) keys its entries by these and checks them again on every read.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kblaster::engine {

struct kernelbench_import_options;

/// Every input of an import, each as text (hashes are FNV-1a of the bytes, support/hash.h).
struct import_inputs {
  std::string problem;   ///< the problem file's content hash
  std::string exporter;  ///< kernelbench_export.py's content hash
  std::string torch;     ///< torch's version.py (its path, content hash and __version__), or "none"
  std::string device;    ///< "cpu: MODEL NAME" or "cuda: GPU NAME, driver VERSION"
  std::string options;   ///< the device asked for and the timing seconds

  /// (name, value) pairs in a fixed order: what an entry's manifest records and is checked against.
  std::vector<std::pair<std::string, std::string>> named() const;
  /// The cache key: a hash over every input, each with its length (so that no two lists collide by
  /// moving a character from one input to the next).
  std::string key() const;
};

/// The inputs of importing `opts` with `python` and `exporter` (both resolved paths). nullopt, with
/// `why` set, when one cannot be told (a file unreadable, nvidia-smi missing for a cuda import): an
/// import whose inputs are not all known is not cached.
std::optional<import_inputs> import_inputs_of(const kernelbench_import_options& opts, const std::string& python,
                                              const std::string& exporter, std::string& why);

/// PyTorch as `python` would import it: the path of torch/version.py, its content hash and its
/// __version__, found without importing torch (a second at least); "none" when python has no
/// torch. Asked once per interpreter per process. nullopt when python cannot be run.
std::optional<std::string> torch_identity(const std::string& python);

/// The device an import on `device` ("cpu" or "cuda") runs on: the CPU's model name, or the first
/// GPU CUDA_VISIBLE_DEVICES leaves visible (an index or a UUID), by its name and driver version.
/// Not its UUID: identical GPUs of a host export and time alike, so eight workers share one entry.
/// Asked once per process. nullopt when the GPU cannot be told (no nvidia-smi, or it fails).
std::optional<std::string> device_identity(const std::string& device);

}  // namespace kblaster::engine
