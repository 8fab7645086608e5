// Registry of `kblaster` subcommands.
#include "cli/command_registry.h"

namespace kblaster::cli {
namespace {
std::vector<command_factory>& registry() {
  static std::vector<command_factory> factories;  // function-local: safe from init order
  return factories;
}
}  // namespace

bool register_command(command_factory factory) {
  registry().push_back(std::move(factory));
  return true;
}

const std::vector<command_factory>& registered_commands() { return registry(); }

}  // namespace kblaster::cli
