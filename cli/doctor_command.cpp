// `kblaster doctor`: what this machine offers KernelBlaster, and what protects the user from the
// code it runs. Read before trusting a machine with model-written candidates: a missing
// sandbox is said here in words, never discovered later.
#include "cli/command_registry.h"
#include "engine/evaluate/harness_client.h"
#include "engine/profile/ncu_runner.h"
#include "engine/toolchain/nvcc_driver.h"
#include "support/sandbox.h"

#include <iostream>

namespace {

int doctor() {
  using namespace kblaster;
  const auto& sb = support::sandbox_support();
  auto line = [](const std::string& what, const std::string& value) {
    std::cout << "  " << what << std::string(what.size() < 10 ? 10 - what.size() : 1, ' ') << value << "\n";
  };
  std::cout << "tools\n";
  const auto nvcc = engine::find_nvcc();
  line("nvcc", nvcc ? *nvcc : "not found (compile diagnostics need the CUDA toolkit)");
  const auto ncu = engine::find_ncu();
  line("ncu", ncu ? *ncu : "not found (profiles fall back to static facts)");
  if (ncu) {
    // An older ncu lacks some of the sections kblaster reads; profiles then go without them.
    const auto& wanted = engine::default_ncu_sections();
    if (const auto has = engine::ncu_section_list(*ncu)) {
      std::string lacks;
      std::size_t lacking = 0;
      for (const auto& s : wanted)
        if (!has->count(s)) lacks += (lacking++ ? ", " : "") + s;
      if (lacking == wanted.size())  // as sections_known_to reads it: a table it cannot read
        line("", "its section list names none that kblaster reads (a format it does not know); profiles ask for all");
      else
        line("", lacks.empty() ? "has the " + std::to_string(wanted.size()) + " sections kblaster reads"
                               : "lacks " + lacks + " of the sections kblaster reads (profiles go without them)");
    } else {
      line("", "could not list its sections (ncu --list-sections failed); profiles ask for all " +
                   std::to_string(wanted.size()));
    }
  }
  const auto harness = engine::find_harness();
  line("harness", harness.empty() ? "not found (Optimize cannot verify candidates)" : harness);
  const auto arch = engine::detect_local_arch();
  line("GPU", arch.empty() ? "none seen by nvidia-smi" : arch);
  std::cout << "\nsandbox for model-written code: " << sb.summary << "\n";
  if (sb.active()) {
    for (const auto& p : sb.protections) std::cout << "  - " << p << "\n";
  } else {
    std::cout << "  WARNING: candidates, their builds and their profiles run with your rights: they can read your\n"
                 "  files and keys, reach the network and signal your processes. Install bubblewrap (Debian:\n"
                 "  apt-get install bubblewrap), or make unprivileged user namespaces available to it.\n"
                 "  KBLASTER_SANDBOX=required refuses to run candidates without it.\n";
  }
  std::cout << "  hidden from jobs:";
  for (const auto& p : support::sandbox_hidden_paths()) std::cout << " " << p.string();
  std::cout << "\n  variables passed to jobs:";
  for (const auto& v : support::sandbox_passed_variables()) std::cout << " " << v;
  std::cout << " CUDA_* (never a name with KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL)\n";
  // Exit status for scripts: 0 sandboxed, 1 not.
  return sb.active() ? 0 : 1;
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand("doctor", "Show the tools found and the sandbox that protects you from candidates");
  return kblaster::cli::command{app, [] { return doctor(); }};
});

}  // namespace
