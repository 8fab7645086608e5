// Subcommands of `kblaster`: each lives in its own file and registers itself here, so that a
// new command is one new file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace kblaster::cli {

/// A registered subcommand: the CLI11 node it added and what runs when it is chosen.
struct command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// Adds one subcommand (with its options) to the root app.
using command_factory = std::function<command(CLI::App& root)>;

/// Called from a static initializer in each command's file. Returns true (for the initializer).
bool register_command(command_factory factory);

/// All factories, in registration order.
const std::vector<command_factory>& registered_commands();

}  // namespace kblaster::cli
