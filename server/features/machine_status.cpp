// kblaster/machineStatus: what this machine offers KernelBlaster, for a client's status display
// (the VS Code extension's status bar item and its tooltip), so that a missing GPU, ncu or nvcc
// is visible where the user looks rather than discovered by a command that does less:
//   {"nvcc": path | null, "gpu": "sm_90" | null, "ncu": path | null,
//    "replayedGpu": bool (optimize.replayHarness: Optimize measures nothing, it replays),
//    "trusted": bool, "missing": "one sentence, empty when nothing is missing"}
// Detected once per daemon (nvidia-smi is slow), as the analysis does.
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;

void register_machine_status(feature_registry& registry, lsp_server& server, editor_state& state) {
  registry.on_request("kblaster/machineStatus", execution::concurrent, [&server, &state](const json&, request_context&) -> json {
    const auto settings = read_editor_settings(server.settings());
    const auto& caps = state.analyzer(settings).capabilities();
    const auto or_null = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
    return {{"nvcc", or_null(caps.nvcc)},
            {"gpu", caps.gpu_arch.empty() ? json(nullptr) : json(caps.gpu_arch)},
            {"ncu", or_null(caps.ncu)},
            {"replayedGpu", !settings.replay_harness.empty()},
            {"trusted", state.workspace_trusted()},
            {"missing", caps.missing()}};
  });
}

}  // namespace kblaster::server
