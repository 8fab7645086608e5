// What stands between a kernel and Optimize, checked before anything runs and before any
// progress begins: the workspace's trust, a GPU to measure on (or recorded results to replay;
// said before anything else the user would set up in vain), something to measure against (a task, or a program:
// a file with main() or run.command), and for a run, a program saved to disk (it is built from
// the file) and the driver a capture needs.
// The code lens and the code action title Optimize with the document's part; workspace/
// executeCommand refuses with all of it.
#pragma once

#include "server/document_store.h"
#include "server/features/editor_settings.h"
#include "server/features/editor_state.h"
#include "server/features/refusal.h"

#include <optional>
#include <string>

namespace kblaster::server {

/// "This machine has no NVIDIA GPU": a no_gpu refusal of `command` on `kernel`, with the example
/// this machine can replay instead when it is installed (facts.example).
refusal no_gpu_refusal(const std::string& command, const std::string& kernel, const std::string& uri);

/// How much is checked: what the document and the trust decide (cheap: lenses and code
/// actions ask it per kernel), or that and what the machine decides (a command about to run).
enum class gate_scope { document, run };

/// The first thing that keeps `command` (kblaster.optimize or kblaster.applyTechnique) from
/// running on `kernel` of `doc`, or nullopt when nothing does. What only the run can tell (a
/// capture that fails, a model that does not answer) is not foreseen here.
std::optional<refusal> optimize_blocker(editor_state& state, const editor_settings& settings, const document_snapshot& doc,
                                        const std::string& command, const std::string& kernel, gate_scope scope);

}  // namespace kblaster::server
