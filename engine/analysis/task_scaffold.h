// A starting point for a kernel's task: NAME.task.json with inputs and outputs inferred from
// the kernel's parameters (const pointers read, other pointers written), and a kb_forward entry
// point stub when the source has none. The user fills in the reference and checks the shapes.
#pragma once

#include "engine/source/kernel_locator.h"

#include <nlohmann/json.hpp>

#include <string>

namespace kblaster::engine {

/// The scaffold for one kernel.
struct task_scaffold {
  std::string task_path;      ///< NAME.task.json beside the source
  nlohmann::json task;        ///< the spec (relative kernel path)
  std::string task_text;      ///< the spec as written, with a provenance line in "description"
  std::string entry_stub;     ///< kb_forward to append; empty when the source defines one
  bool needs_dlpack_include = false;  ///< the stub needs #include <dlpack/dlpack.h>
};

/// Scaffolds a task for `kernel` in `source` (the file at `cu_path`). Never throws for odd
/// signatures: what cannot be inferred is left as a TODO in the spec and the stub.
task_scaffold scaffold_task(const std::string& cu_path, const std::string& source, const cuda_symbol& kernel);

}  // namespace kblaster::engine
