// State the editor features share for one daemon: the analysis service, the KB insight
// service, what the client can do, and which one-time messages were already shown.
// Thread-safe: every member is either internally synchronised or atomic.
#pragma once

#include "engine/analysis/file_analysis.h"
#include "engine/analysis/kernel_insight.h"
#include "protocol/json_rpc.h"
#include "server/features/diagnostics_publisher.h"
#include "server/features/editor_settings.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>

namespace kblaster::server {

class lsp_server;

/// The editor on the other end, so that what the daemon writes itself names the remedy in that
/// editor's terms (refusal.h); `other` gets editor-neutral words.
enum class client_editor { other, vscode, neovim };

/// The key in initializationOptions by which a client names its editor ("vscode", "neovim").
inline constexpr std::string_view editor_key = "editor";

/// From initialize's params: initializationOptions.editor when it is "vscode" or "neovim", else
/// clientInfo.name (Neovim's "Neovim"; VS Code's application name: "Visual Studio Code",
/// "Code - OSS", "code-server", ...), else other.
client_editor client_editor_of(const protocol::json& initialize_params);

/// Shared by the diagnostics, hover, code lens, code action and command features.
class editor_state {
 public:
  /// The analysis service, created on first use with the ncu path the settings name.
  engine::file_analyzer& analyzer(const editor_settings& settings);
  engine::insight_service& insight() { return insight_; }
  diagnostics_publisher& diagnostics() { return diagnostics_; }

  /// The client's raw capabilities (set by initialize).
  void set_client_capabilities(protocol::json caps);
  protocol::json client_capabilities() const;
  /// True when the client accepts `disabled` on code actions.
  bool code_action_disabled_support() const;
  /// True when the client re-asks for code lenses on workspace/codeLens/refresh (LSP 3.16).
  bool code_lens_refresh_support() const;
  /// True when the client's WorkspaceEdit may create files.
  bool can_create_files() const;

  /// Whether the user trusts the workspace, so that its code may be built and run (profiling,
  /// Optimize); false until the client says so (workspace_trust.h).
  bool workspace_trusted() const { return trusted_.load(); }
  void set_workspace_trusted(bool trusted) { trusted_.store(trusted); }

  /// Which editor the client is (set by initialize).
  client_editor editor() const { return editor_.load(); }
  void set_editor(client_editor editor) { editor_.store(editor); }

  /// True the first time it is called for `what`: for messages shown once per session.
  bool first_time(const std::string& what);

 private:
  std::once_flag analyzer_once_;
  std::unique_ptr<engine::file_analyzer> analyzer_;
  engine::insight_service insight_;
  diagnostics_publisher diagnostics_;
  mutable std::mutex mutex_;
  protocol::json client_caps_ = protocol::json::object();
  std::vector<std::string> shown_;
  std::atomic<bool> trusted_{false};
  std::atomic<client_editor> editor_{client_editor::other};
};

}  // namespace kblaster::server
