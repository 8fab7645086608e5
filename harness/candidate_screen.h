// Static screening of a candidate before anything of it runs: what its shared object imports
// and how it is laid out, read from the ELF file (elf_imports.h). A kernel needs the CUDA
// runtime, the C++ runtime's plumbing and math; it never needs to load code, start processes
// or threads, open sockets or files, send signals, change memory protections, make raw system
// calls, or run code when it is loaded. Each refusal names the symbol and the rule.
//
// This is the outer wall: a candidate can still reach the kernel with inline assembly, which is
// why the harness also runs in the sandbox (support/sandbox.h). Candidates are built with the
// shared CUDA runtime, so that the static runtime's own dlopen does not hide a candidate's.
#pragma once

#include "harness/elf_imports.h"

#include <optional>
#include <string>

namespace kblaster::harness {

/// Why a candidate was refused.
struct screening_refusal {
  std::string rule;    ///< dynamic_loading, processes, threads, network, signals, file_system, memory_protection,
                       ///< raw_syscalls, environment, constructors, writable_executable, import_not_allowed
  std::string symbol;  ///< the import (or section) that broke it
  std::string reason;  ///< a sentence for the user and the repair prompt
};

/// The first rule `imports` breaks, or nullopt when the candidate may run.
std::optional<screening_refusal> screen_candidate(const elf_imports& imports);

}  // namespace kblaster::harness
