// A capture as a task the harness understands: the reference is the original kernel, built from
// the program's own source, the candidate starts as the same kernel; both are called through
// the generated launcher on the captured memory, and every allocation the launch writes is
// compared afterwards (dtype-aware; an allocation it leaves alone must stay unchanged, which
// the harness checks of every input).
#pragma once

#include "engine/capture/capture_launcher.h"
#include "engine/capture/kernel_capture.h"
#include "engine/source/kernel_locator.h"

#include <string>
#include <vector>

namespace kblaster::engine {

struct capture_task {
  std::string name;            // the task's name (task.json)
  std::string dir;             // the task folder (task.json, kernel.cu, reference.cu)
  std::string kernel_path;     // the candidate source: the program up to the kernel, and the launcher
  std::string reference_path;  // the same, kept as written: the reference
  cuda_symbol kernel;          // the kernel's definition in the program's source
  std::vector<allocation_view> views;
  std::vector<std::string> notes;  // what the user should know (hidden pointers, a varying original, …)
};

/// The definition in `symbols` of the kernel `capture` names: by qualified or plain name and,
/// among several, the one with as many parameters as were captured. nullptr when none.
const cuda_symbol* captured_kernel_symbol(const std::vector<cuda_symbol>& symbols, const kernel_capture& capture);

/// Writes the task of `capture` into `capture.dir`/task from `program_source` (the file that
/// defines the kernel). `provenance` says where the launch came from ("launch 0 of ./stencil 64 48").
/// An output on which the original varies from run to run (the agent's second run) gets its own
/// atol, wide enough for that variation (capture_variation.h), and a note saying so.
/// Throws capture_error for a refused capture (with the agent's message), a kernel not in the
/// source, or an output that varies where it must compare bit for bit (integers).
/// `name`: the task's name; empty: made from the kernel's.
capture_task write_capture_task(const kernel_capture& capture, const std::string& program_source,
                                const std::string& provenance, const std::string& name = "");

}  // namespace kblaster::engine
