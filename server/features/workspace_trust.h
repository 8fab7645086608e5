// Workspace trust: whether the daemon may build and RUN the workspace's code (profiling a saved
// file under ncu, Optimize's candidates). Until the client says the user trusts the workspace,
// the daemon gives compile-only service: diagnostics, static facts, hover, lenses.
//
// The wire: initialize's `initializationOptions.workspaceTrusted` (true or false; absent is
// false), and later the notification `kblaster/setTrust` {"trusted": bool}. Never a setting:
// settings come from the workspace too (VS Code's .vscode/settings.json reaches
// workspace/didChangeConfiguration), and a workspace must not be able to trust itself.
#pragma once

#include "protocol/json_rpc.h"
#include "server/feature_registry.h"
#include "server/features/editor_state.h"

#include <string>
#include <string_view>

namespace kblaster::server {

class lsp_server;

/// The key in initializationOptions.
inline constexpr std::string_view workspace_trusted_key = "workspaceTrusted";

/// Refuses `command` on `uri` (and `kernel`) with refusal_kind::untrusted (refusal.h) unless the
/// workspace is trusted: the one gate in front of every command that runs the workspace's code.
void require_trust(const editor_state& state, const std::string& command, const std::string& uri, const std::string& kernel);

/// Reads initializationOptions.workspaceTrusted into `state` (a value that is not a boolean is
/// logged, naming the field, and counts as not trusted).
void apply_initial_trust(lsp_server& server, editor_state& state, const protocol::json& initialization_options);

/// kblaster/setTrust.
void register_workspace_trust(feature_registry& registry, lsp_server& server, editor_state& state);

}  // namespace kblaster::server
