// initialize / initialized / shutdown / exit.
#include "kblaster_version.h"
#include "server/features/commands.h"
#include "server/features/editor_settings.h"
#include "server/features/features.h"
#include "server/features/workspace_trust.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;

/// Applies the settings this layer understands (the engine's come later); unknown keys are kept.
void apply_settings(lsp_server& server) {
  const json settings = server.settings();
  if (const auto it = settings.find("logLevel"); it != settings.end() && it->is_string()) {
    if (const auto level = parse_log_level(it->get<std::string>())) server.log().set_level(*level);
    else server.log().warn("setting logLevel: unknown level " + it->dump() + " (use error, warn, info, debug or trace)");
  }
  std::vector<std::string> problems;
  read_editor_settings(settings, &problems);
  for (const auto& p : problems) server.log().warn(p);
}

void register_lifecycle(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_request("initialize", execution::ordered, [&server, &state](const json& params, request_context&) -> json {
    if (server.initialized())
      throw protocol::rpc_error(protocol::error_code::invalid_request, "initialize was already received");
    if (!params.is_object())
      throw protocol::rpc_error(protocol::error_code::invalid_params, "invalid params: initialize needs an object");
    server.mark_initialized(params);
    state.set_client_capabilities(params.value("capabilities", json::object()));
    const json options = params.value("initializationOptions", json::object());
    apply_initial_trust(server, state, options);
    state.set_editor(client_editor_of(params));
    if (options.is_object()) {
      // Accept our section ({"kblaster": {...}}) or the settings themselves, as for
      // workspace/didChangeConfiguration; trust and the editor's name sit beside the settings.
      const auto ours = options.find("kblaster");
      json settings = ours != options.end() && ours->is_object() ? *ours : options;
      settings.erase(std::string(workspace_trusted_key));
      settings.erase(std::string(editor_key));
      server.merge_settings(settings);
      apply_settings(server);
    }
    server.log().info("initialized by " + params.value("/clientInfo/name"_json_pointer, std::string("an unnamed client")));
    return {
        {"capabilities",
         {{"positionEncoding", "utf-16"},
          {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
          {"documentSymbolProvider", true},
          {"hoverProvider", true},
          {"codeLensProvider", {{"resolveProvider", false}}},
          {"codeActionProvider", {{"codeActionKinds", {"refactor", "refactor.rewrite"}}}},
          {"executeCommandProvider", {{"commands", advertised_commands()}}}}},
        {"serverInfo", {{"name", "kblaster"}, {"version", KBLASTER_VERSION}}},
    };
  });
  registry.on_notification("initialized", [&server](const json&) { server.log().debug("client confirmed initialization"); });
  registry.on_request("shutdown", execution::ordered, [&server](const json&, request_context&) -> json {
    server.mark_shutdown();
    return nullptr;
  });
  registry.on_notification("exit", [&server](const json&) { server.request_exit(); });
}

}  // namespace kblaster::server
