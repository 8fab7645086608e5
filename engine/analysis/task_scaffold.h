// A starting point for a kernel's task: NAME.task.json with inputs and outputs inferred from
// the kernel's parameters and body (const pointers read; a pointer the body writes is an output,
// and one it also reads an in-place output that starts from its input), its scalars with the
// values of a launch written in the file or marked to fill in, and a kb_forward entry point stub
// (calling the kernel by its qualified name) when the source has none. The user fills in the
// reference and checks the shapes.
#pragma once

#include "engine/source/kernel_locator.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// The scaffold for one kernel.
struct task_scaffold {
  std::string task_path;      ///< NAME.task.json beside the source
  nlohmann::json task;        ///< the spec (relative kernel path)
  std::string task_text;      ///< the spec as written, with a provenance line in "description"
  std::string entry_stub;     ///< kb_forward to append; empty when the source defines one
  bool needs_dlpack_include = false;  ///< the stub needs #include <dlpack/dlpack.h>
};

/// How a kernel body uses one of its pointers.
struct pointer_use {
  bool read = false, written = false;
};

/// Whether `body` reads and writes through `name`: `name[i] = v` writes, `name[i] += v`,
/// `name[i]++` and atomics on it read and write, any other mention reads.
pointer_use use_in_body(std::string_view body, std::string_view name);

/// The arguments of the first launch `name<<<…>>>(args)` in `source`, as written; empty if none.
std::vector<std::string> launch_arguments(std::string_view source, std::string_view name);

/// Scaffolds a task for `kernel` in `source` (the file at `cu_path`). Never throws for odd
/// signatures: what cannot be inferred is left as a TODO in the spec and the stub.
task_scaffold scaffold_task(const std::string& cu_path, const std::string& source, const cuda_symbol& kernel);

}  // namespace kblaster::engine
