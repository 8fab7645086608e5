// workspace/executeCommand. For now one command, kblaster.selfTest: a cancellable job that
// reports progress, so that editors and tests can exercise progress and cancellation.
#include "server/features/features.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <thread>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;

namespace {

int int_argument(const json& args, const char* name, int fallback, int lo, int hi) {
  if (!args.contains(name)) return fallback;
  const json& v = args[name];
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw rpc_error(error_code::invalid_params, std::string("invalid params: 'arguments[0].") + name +
                                                    "' must be an integer from " + std::to_string(lo) + " to " +
                                                    std::to_string(hi));
  return v.get<int>();
}

json self_test(const json& arguments, request_context& ctx) {
  const json args = arguments.is_array() && !arguments.empty() ? arguments[0] : json::object();
  if (!args.is_object()) throw rpc_error(error_code::invalid_params, "invalid params: 'arguments[0]' must be an object");
  const int steps = int_argument(args, "steps", 10, 1, 10000);
  const int step_ms = int_argument(args, "stepMs", 100, 0, 60000);
  // A self-test about a document answers ContentModified when that document is edited.
  if (const auto uri = args.find("textDocument"); uri != args.end())
    ctx.watch_document(protocol::lsp::required_string(args, "textDocument.uri"));

  work_done_progress progress(ctx, "KernelBlaster self-test", "starting");
  for (int step = 1; step <= steps; ++step) {
    // Sleep in slices so that a cancel is noticed within ~5 ms.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(step_ms);
    do {
      ctx.check_cancelled();
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(5), until - std::chrono::steady_clock::now()));
    } while (std::chrono::steady_clock::now() < until);
    ctx.check_cancelled();
    progress.report("step " + std::to_string(step) + " of " + std::to_string(steps), step * 100 / steps);
  }
  progress.end("done");
  return {{"completedSteps", steps}};
}

}  // namespace

void register_execute_command(feature_registry& registry, lsp_server&) {
  registry.on_request("workspace/executeCommand", execution::concurrent, [](const json& params, request_context& ctx) {
    const std::string command = protocol::lsp::required_string(params, "command");
    const json arguments = params.value("arguments", json::array());
    if (command == "kblaster.selfTest") return self_test(arguments, ctx);
    throw rpc_error(error_code::invalid_params, "invalid params: unknown command '" + command + "'");
  });
}

}  // namespace kblaster::server
