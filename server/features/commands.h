// The workspace/executeCommand commands that act on a kernel, one file each.
#pragma once

#include "protocol/json_rpc.h"
#include "server/features/editor_state.h"
#include "server/request_context.h"

#include <string>

namespace kblaster::server {

/// {uri, kernel, technique?}: the arguments every kernel command takes (arguments[0]).
struct command_args {
  std::string uri, kernel, technique;
  /// Reads arguments[0]; throws InvalidParams naming the missing field.
  static command_args from(const std::string& command, const protocol::json& arguments, bool needs_kernel,
                           bool needs_technique = false);
};

/// kblaster.createTask (create_task.cpp).
protocol::json create_task_command(const command_args& args, request_context& ctx, editor_state& state);
/// kblaster.profile: analyse now (no debounce) and publish; returns a summary (profile_command.cpp).
protocol::json profile_command(const command_args& args, request_context& ctx, editor_state& state);
/// kblaster.optimize and kblaster.applyTechnique (optimize_command.cpp).
protocol::json optimize_command(const command_args& args, request_context& ctx, editor_state& state);

/// kblaster.optimizeProgram: every kernel worth it, kept when the program runs faster end to end
/// (optimize_program_command.cpp).
protocol::json optimize_program_command(const command_args& args, request_context& ctx, editor_state& state);

/// kblaster.replayExample: the shipped example replayed with the settings it was recorded with,
/// on a copy in a scratch folder; what a machine without a GPU can run (example_command.cpp).
protocol::json replay_example_command(const protocol::json& arguments, request_context& ctx, editor_state& state);

/// The commands the server advertises.
const std::vector<std::string>& advertised_commands();

}  // namespace kblaster::server
