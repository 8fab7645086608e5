// `kblaster doctor`: what this machine offers KernelBlaster, and what protects the user from the
// code it runs. Read before trusting a machine with model-written candidates: a missing
// sandbox is said here in words, never discovered later.
#include "cli/command_registry.h"
#include "engine/evaluate/harness_client.h"
#include "engine/profile/ncu_runner.h"
#include "engine/toolchain/nvcc_driver.h"
#include "kb/location.h"
#include "kb/schema.h"
#include "support/sandbox.h"

#include <filesystem>
#include <iostream>
#include <memory>

namespace {

// The KB in use (--kb, else the config file's "kb", else the per-user file): its backend, and
// for a server whether it answers. Reads only; the password of a URI is never shown.
void report_kb(const std::string& given) {
  using namespace kblaster;
  std::cout << "\nknowledge base\n";
  std::string where;
  try {
    where = given.empty() ? kb::default_kb_path().string() : given;
  } catch (const kb::kb_error& e) {
    std::cout << "  " << e.what() << "\n";
    return;
  }
  if (!kb::sql::is_server_uri(where)) {
    std::error_code ec;
    std::cout << "  backend   sqlite (embedded file)\n  location  " << where
              << (std::filesystem::exists(where, ec) ? "" : " (created on first use)") << "\n";
    return;
  }
  std::cout << "  backend   postgresql (team server)\n  location  " << kb::sql::redact(where) << "\n";
  try {
    auto db = kb::sql::database::connect_postgres(where);
    const int version = kb::schema::current_version(db);
    std::cout << "  server    reachable; "
              << (version == 0 ? std::string("no KB yet (created on first use)")
                               : "schema version " + std::to_string(version) + " (this kblaster writes " +
                                     std::to_string(kb::schema::latest_version()) + ")")
              << "\n";
  } catch (const kb::kb_error& e) {
    std::cout << "  server    NOT reachable: " << e.what() << "\n";
  }
}

int doctor(const std::string& kb_location) {
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
  // Deny by default: the allow-list is the whole of what a job sees, so it is shown whole.
  std::cout << "  what every job sees (besides its own task and sources, read-only, and its scratch folder);\n"
               "  nothing else of your files ($KBLASTER_SANDBOX_ALLOW adds folders):\n";
  for (const auto& m : support::sandbox_system_view(true))
    std::cout << "    " << m.path.string() << (m.how == support::sandbox_mount::access::symlink ? " -> " + m.link_target.string() : "")
              << ": " << m.why << "\n";
  std::cout << "  hidden again should a shown folder hold them:";
  for (const auto& p : support::sandbox_hidden_paths()) std::cout << " " << p.string();
  std::cout << "\n  variables passed to jobs:";
  for (const auto& v : support::sandbox_passed_variables()) std::cout << " " << v;
  std::cout << " CUDA_* (never a name with KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL)\n";
  report_kb(kb_location);
  // Exit status for scripts: 0 sandboxed, 1 not.
  return sb.active() ? 0 : 1;
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand("doctor", "Show the tools found, the sandbox that protects you from candidates, and the KB");
  auto kb_location = std::make_shared<std::string>();
  app->add_option("--kb", *kb_location, "the KB to check (a file or a postgresql:// URI; default as `kblaster kb`)");
  return kblaster::cli::command{app, [kb_location] { return doctor(*kb_location); }};
});

}  // namespace
