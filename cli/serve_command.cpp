// `kblaster serve`: the LSP daemon, on stdio (default) or TCP on loopback.
#include "cli/command_registry.h"
#include "server/logger.h"
#include "server/lsp_server.h"
#include "support/child_process.h"

#include <csignal>
#include <iostream>
#include <thread>

namespace {

struct serve_options {
  std::string listen;  // HOST:PORT, empty for stdio
  bool stdio = false;  // --stdio: what LSP clients pass; stdio is the default anyway
  int client_process_id = 0;
  std::string log_file;
  std::string log_level = "info";
  std::size_t max_message_mib = 64;
};

int run_serve(const serve_options& opts) {
  // A client that disappears must not kill the daemon with SIGPIPE mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  using namespace kblaster::server;
  if (opts.stdio && !opts.listen.empty()) throw std::runtime_error("--stdio and --listen exclude each other");
  const auto level = parse_log_level(opts.log_level);
  if (!level) throw std::runtime_error("--log-level: unknown level '" + opts.log_level + "'");
  logger log(*level, opts.log_file.empty() ? logger::default_file() : std::filesystem::path(opts.log_file));

  std::unique_ptr<transport> io;
  if (opts.listen.empty()) {
    io = make_stdio_transport();
  } else {
    const auto colon = opts.listen.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("--listen wants HOST:PORT, e.g. 127.0.0.1:7878");
    const std::string host = opts.listen.substr(0, colon);
    int port = -1;
    try {
      port = std::stoi(opts.listen.substr(colon + 1));
    } catch (const std::exception&) {
    }
    if (port < 0 || port > 65535) throw std::runtime_error("--listen: bad port in '" + opts.listen + "'");
    io = make_tcp_transport(host, static_cast<std::uint16_t>(port), [&](std::uint16_t real) {
      // On stderr so that scripts (and tests using port 0) can read where we listen.
      std::cerr << "kblaster: listening on " << host << ":" << real << std::endl;
    });
  }
  server_options options;
  options.worker_threads = std::max(4u, std::thread::hardware_concurrency());
  options.max_message_bytes = opts.max_message_mib << 20;
  if (opts.client_process_id > 0) options.client_process_id = opts.client_process_id;
  options.watch_client_process = true;
  // No job may keep the exit waiting: nvcc, ncu and harnesses in flight are killed, and none
  // starts after (their results would have no reader).
  options.on_exit = [] { kblaster::support::stop_all_children(); };
  lsp_server server(*io, log, options);
  log.info("kblaster serve started");
  return server.run();
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto opts = std::make_shared<serve_options>();
  auto* app = root.add_subcommand("serve", "Run the language server (stdio unless --listen)");
  app->add_option("--listen", opts->listen, "Listen on HOST:PORT (loopback only) instead of stdio");
  // What LSP clients append to the server's command line (vscode-languageclient: `--stdio`
  // for TransportKind.stdio, and `--clientProcessId=PID`).
  app->add_flag("--stdio", opts->stdio, "Speak LSP on stdin/stdout (the default)");
  app->add_option("--clientProcessId,--client-process-id", opts->client_process_id,
                  "Exit when this process (the editor) ends")
      ->check(CLI::PositiveNumber);
  app->add_option("--log-file", opts->log_file, "Log file (default $XDG_STATE_HOME/kblaster/kblaster.log)");
  app->add_option("--log-level", opts->log_level, "error, warn, info, debug or trace")->capture_default_str();
  app->add_option("--max-message-mib", opts->max_message_mib, "Largest accepted message, in MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  return kblaster::cli::command{app, [opts] { return run_serve(*opts); }};
});

}  // namespace
