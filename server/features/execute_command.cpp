// workspace/executeCommand: kblaster.selfTest (a cancellable job that reports progress, for
// editors and tests), and the kernel commands (profile, createTask, optimize, applyTechnique),
// each implemented in its own file. The commands that run the workspace's code (profile,
// optimize, applyTechnique) wait for workspace trust (workspace_trust.h), and Optimize for what
// else it needs (optimize_gate.h): each refused with a typed refusal (refusal.h) before any
// progress begins. createTask only proposes an edit and runs nothing.
#include "server/features/commands.h"
#include "server/features/features.h"
#include "server/features/optimize_gate.h"
#include "server/features/workspace_trust.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"
#include "support/stop_wait.h"

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
  int step_ms = int_argument(args, "stepMs", 100, 0, 60000);
  // The steps wait for a cancel; on a single thread none can be read meanwhile.
  if (ctx.server().single_threaded()) step_ms = 0;
  // A self-test about a document answers ContentModified when that document is edited.
  if (const auto uri = args.find("textDocument"); uri != args.end())
    ctx.watch_document(protocol::lsp::required_string(args, "textDocument.uri"));

  work_done_progress progress(ctx, "KernelBlaster self-test", "starting");
  for (int step = 1; step <= steps; ++step) {
    // A cancel ends the step's pause at once.
    ctx.check_cancelled();
    support::sleep_unless_stopped(std::chrono::milliseconds(step_ms), ctx.stop_token());
    ctx.check_cancelled();
    progress.report("step " + std::to_string(step) + " of " + std::to_string(steps), step * 100 / steps);
  }
  progress.end("done");
  return {{"completedSteps", steps}};
}

}  // namespace

command_args command_args::from(const std::string& command, const json& arguments, bool needs_kernel,
                                bool needs_technique) {
  if (!arguments.is_array() || arguments.empty() || !arguments[0].is_object())
    throw rpc_error(error_code::invalid_params,
                    "invalid params: " + command + " takes arguments [{\"uri\": ..., \"kernel\": ...}]");
  const json& a = arguments[0];
  const auto field = [&](const char* name, bool required) -> std::string {
    const auto it = a.find(name);
    if (it == a.end() || it->is_null()) {
      if (required) throw rpc_error(error_code::invalid_params, std::string("invalid params: 'arguments[0].") + name + "' is required by " + command);
      return "";
    }
    if (!it->is_string()) throw rpc_error(error_code::invalid_params, std::string("invalid params: 'arguments[0].") + name + "' must be a string");
    return it->get<std::string>();
  };
  command_args out;
  out.uri = field("uri", true);
  out.kernel = field("kernel", needs_kernel);
  out.technique = field("technique", needs_technique);
  return out;
}

const std::vector<std::string>& advertised_commands() {
  static const std::vector<std::string> commands = {"kblaster.selfTest", "kblaster.profile", "kblaster.createTask",
                                                    "kblaster.optimize", "kblaster.applyTechnique",
                                                    "kblaster.optimizeProgram", "kblaster.replayExample"};
  return commands;
}

void register_execute_command(feature_registry& registry, lsp_server&, editor_state& state) {
  registry.on_request("workspace/executeCommand", execution::concurrent, [&state](const json& params, request_context& ctx) {
    const std::string command = protocol::lsp::required_string(params, "command");
    const json arguments = params.value("arguments", json::array());
    if (command == "kblaster.selfTest") return self_test(arguments, ctx);
    if (command == "kblaster.profile") {
      const auto args = command_args::from(command, arguments, false);
      require_trust(state, command, args.uri, args.kernel);
      return profile_command(args, ctx, state);
    }
    if (command == "kblaster.createTask") return create_task_command(command_args::from(command, arguments, true), ctx, state);
    if (command == "kblaster.optimize" || command == "kblaster.applyTechnique") {
      const auto args = command_args::from(command, arguments, true, command == "kblaster.applyTechnique");
      require_trust(state, command, args.uri, args.kernel);
      // Refused before anything runs and before any progress begins, so that the editor shows
      // the refusal alone (optimize_command.cpp says what the document's absence means).
      if (const auto doc = ctx.server().documents().get(args.uri))
        if (auto r = optimize_blocker(state, read_editor_settings(ctx.server().settings()), *doc, command, args.kernel,
                                      gate_scope::run))
          refuse(*r);
      return optimize_command(args, ctx, state);
    }
    // Runs nothing of the workspace (a copy of the shipped example, replayed): no trust asked.
    if (command == "kblaster.replayExample") return replay_example_command(arguments, ctx, state);
    if (command == "kblaster.optimizeProgram") {
      const auto args = command_args::from(command, arguments, false);
      require_trust(state, command, args.uri, args.kernel);
      return optimize_program_command(args, ctx, state);
    }
    throw rpc_error(error_code::invalid_params, "invalid params: unknown command '" + command + "'");
  });
}

}  // namespace kblaster::server
