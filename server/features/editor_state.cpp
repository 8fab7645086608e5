// Shared editor state.
#include "server/features/editor_state.h"

#include "engine/analysis/replayed_profiler.h"

#include <algorithm>

namespace kblaster::server {

engine::file_analyzer& editor_state::analyzer(const editor_settings& settings) {
  std::call_once(analyzer_once_, [&] {
    auto caps = engine::detect_capabilities(settings.ncu_path);
    engine::live_profiler live;
    if (!caps.can_profile_live() && !settings.profile_replay.empty()) {
      // A recorded report stands in for the GPU (demos, tests); the UI says it is replayed.
      live = engine::replayed_profiler(settings.profile_replay, settings.profile_replay_timeline);
      caps.gpu_arch = caps.gpu_arch.empty() ? "replay" : caps.gpu_arch;
      if (!caps.ncu) caps.ncu = "replay";
    }
    analyzer_ = std::make_unique<engine::file_analyzer>(std::move(caps), std::move(live));
  });
  return *analyzer_;
}

void editor_state::set_client_capabilities(protocol::json caps) {
  std::lock_guard lock(mutex_);
  client_caps_ = caps.is_object() ? std::move(caps) : protocol::json::object();
}

protocol::json editor_state::client_capabilities() const {
  std::lock_guard lock(mutex_);
  return client_caps_;
}

bool editor_state::code_action_disabled_support() const {
  const auto caps = client_capabilities();
  return caps.value("/textDocument/codeAction/disabledSupport"_json_pointer, false);
}

bool editor_state::code_lens_refresh_support() const {
  const auto caps = client_capabilities();
  return caps.value("/workspace/codeLens/refreshSupport"_json_pointer, false);
}

bool editor_state::can_create_files() const {
  const auto caps = client_capabilities();
  const auto ops = caps.value("/workspace/workspaceEdit/resourceOperations"_json_pointer, protocol::json::array());
  return ops.is_array() && std::find(ops.begin(), ops.end(), "create") != ops.end() &&
         caps.value("/workspace/workspaceEdit/documentChanges"_json_pointer, false);
}

client_editor client_editor_of(const protocol::json& params) {
  if (!params.is_object()) return client_editor::other;
  const auto options = params.find("initializationOptions");
  if (options != params.end() && options->is_object()) {
    const auto said = options->find(std::string(editor_key));
    if (said != options->end() && *said == "vscode") return client_editor::vscode;
    if (said != options->end() && *said == "neovim") return client_editor::neovim;
  }
  const auto ptr = "/clientInfo/name"_json_pointer;
  const std::string name = params.contains(ptr) && params[ptr].is_string() ? params[ptr].get<std::string>() : "";
  if (name.find("Neovim") != std::string::npos || name.find("nvim") != std::string::npos) return client_editor::neovim;
  if (name.find("Code") != std::string::npos || name.find("code-server") != std::string::npos ||
      name.find("VSCodium") != std::string::npos)
    return client_editor::vscode;
  return client_editor::other;
}

bool editor_state::first_time(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (std::find(shown_.begin(), shown_.end(), what) != shown_.end()) return false;
  shown_.push_back(what);
  return true;
}

}  // namespace kblaster::server
