// A command refused before it runs, typed on the wire, and the words the daemon itself shows for
// what stands in a kernel's way. The one place where both are made.
//
// The wire: a refused kblaster.profile, kblaster.optimize or kblaster.applyTechnique answers
// RequestFailed with a short, editor-neutral `message` and a machine-readable `data`:
//   {"refusal": "untrusted" | "no_task" | "task_unreadable" | "not_saved" | "no_gpu" | "no_model",
//    "command": "kblaster.optimize", "kernel": "vadd", "file": "file:///...", "detail": "...", ...facts}
// (`file`, `kernel` and `detail` only when known; `detail` is the cause alone, never a repeat of
// what the refusal kind already says). A no_model refusal adds what the fix needs: "model",
// "provider", "providerFrom", "keyEnv", "keyEnvFrom", "reason" ("no_key" when the key's variable
// is unset in the daemon's environment) and "suggestedProvider" (a Claude model on the OpenAI
// provider: "anthropic", with "suggestedKeyEnv"). A task_unreadable refusal adds "taskFile", the
// task file to open and fix, when it is known; a no_task refusal adds it when the file's task file
// is another kernel's (a second one cannot be created beside it: set the program instead). A client that knows `refusal` words it for its editor
// with the button or command that removes the cause (the VS Code extension, the Neovim plugin);
// any other client shows `message`.
//
// What the daemon renders itself (code lens and code action titles, the hover's note, the one
// message on open) names the remedy in the connected editor's terms: the client says which
// editor it is in initialize (client_editor, editor_state.h).
#pragma once

#include "protocol/json_rpc.h"
#include "server/features/editor_state.h"

#include <optional>
#include <string>
#include <string_view>

namespace kblaster::server {

/// Why a command cannot run.
enum class refusal_kind {
  untrusted,        ///< the user has not trusted the workspace: nothing of it may run
  no_task,          ///< no task for the file and no main(): nothing to measure against
  task_unreadable,  ///< a task file exists but cannot be used (detail: which field)
  not_saved,        ///< a program is built from the file on disk, which differs from the buffer (detail: its name)
  no_gpu,           ///< candidates cannot be measured here, nor a program captured (no GPU, no driver)
  no_model,         ///< the configured model cannot be used (detail: why)
};

/// The wire name: "untrusted", "no_task", ...
std::string_view to_string(refusal_kind kind);

/// One refusal of one command.
struct refusal {
  refusal_kind kind = refusal_kind::untrusted;
  std::string command;  ///< "kblaster.optimize", "kblaster.profile", ...
  std::string kernel;   ///< empty when the command names none
  std::string uri;      ///< the document the command was about
  std::string detail;   ///< the engine's own words, when it gave some
  protocol::json facts = protocol::json::object();  ///< more fields of data() (no_model: model_facts)

  /// One editor-neutral sentence: what is off and why (no editor's commands).
  std::string message() const;
  /// {"refusal", "command", "file"?, "kernel"?, "detail"?, ...facts}.
  protocol::json data() const;
  /// RequestFailed with message() and data().
  protocol::rpc_error error() const;

 private:
  std::string model_message() const;  ///< no_model's sentence, from facts when there are some
};

/// Throws r.error().
[[noreturn]] void refuse(const refusal& r);

/// A lens's or code action's few words on what to do first: "trust this folder first" (VS Code),
/// "trust this project first" (Neovim), "create a task or set run.command first", ...
std::string first_step(refusal_kind kind, client_editor editor);

/// A paragraph for the hover and the one message on open: `what_is_off` ("Profiling and
/// Optimize are off"), why, what works meanwhile, and how to trust the workspace in `editor`.
std::string untrusted_note(std::string_view what_is_off, client_editor editor);

}  // namespace kblaster::server
