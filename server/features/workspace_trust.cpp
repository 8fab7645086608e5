// kblaster/setTrust and the trust gate (its words are refusal.cpp's).
#include "server/features/workspace_trust.h"

#include "protocol/lsp_types.h"
#include "server/features/refusal.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;

namespace {

/// kblaster/setTrust's params: {"trusted": bool}.
struct set_trust_params {
  bool trusted = false;
  static set_trust_params from(const json& params) {
    const json& v = protocol::lsp::required_field(params, "trusted");
    if (!v.is_boolean()) throw protocol::rpc_error(protocol::error_code::invalid_params, "invalid params: 'trusted' must be true or false");
    return {v.get<bool>()};
  }
};

}  // namespace

void require_trust(const editor_state& state, const std::string& command, const std::string& uri, const std::string& kernel) {
  if (!state.workspace_trusted()) refuse({refusal_kind::untrusted, command, kernel, uri, ""});
}

void apply_initial_trust(lsp_server& server, editor_state& state, const json& initialization_options) {
  bool trusted = false;
  if (initialization_options.is_object()) {
    if (const auto it = initialization_options.find(workspace_trusted_key); it != initialization_options.end()) {
      if (it->is_boolean()) trusted = it->get<bool>();
      else server.log().warn("initializationOptions.workspaceTrusted must be true or false (got " + it->dump() +
                             "): the workspace is treated as not trusted");
    }
  }
  state.set_workspace_trusted(trusted);
  server.log().info(trusted ? "the client trusts this workspace: profiling and Optimize may run its code"
                            : "the workspace is not trusted: compile-only (no profiling, no Optimize) until kblaster/setTrust");
}

void register_workspace_trust(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_typed_notification<set_trust_params>("kblaster/setTrust", [&server, &state](const set_trust_params& p) {
    if (p.trusted == state.workspace_trusted()) return;
    state.set_workspace_trusted(p.trusted);
    server.log().info(p.trusted ? "workspace trusted by the user: profiling on the next save, Optimize enabled"
                                : "workspace trust withdrawn: compile-only from now on");
    // The lenses say whether Optimize can run: let the client fetch them again.
    if (state.code_lens_refresh_support())
      server.run_in_background([&server] { server.call_client("workspace/codeLens/refresh", nullptr, std::chrono::seconds(5)); });
  });
}

}  // namespace kblaster::server
