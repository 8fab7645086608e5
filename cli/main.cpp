// kblaster: the command-line entry point. Thin: parses arguments and hands over.
#include "cli/command_registry.h"
#include "kblaster_version.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"KernelBlaster: profiles CUDA kernels and makes them faster, from your editor.",
               "kblaster"};
  app.set_version_flag("--version", std::string("kblaster ") + KBLASTER_VERSION);
  app.require_subcommand(1);

  std::vector<kblaster::cli::command> commands;
  for (const auto& factory : kblaster::cli::registered_commands()) commands.push_back(factory(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const auto& c : commands)
    if (c.app->parsed()) {
      try {
        return c.run();
      } catch (const std::exception& e) {
        std::cerr << "kblaster: " << e.what() << "\n";
        return 2;
      }
    }
  return 1;
}
