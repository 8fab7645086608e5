// `kblaster serve`: the LSP daemon, on stdio (default), a Unix socket, or TCP on loopback with
// a token (server/transport.h says who each admits).
#include "cli/command_registry.h"
#include "server/connection_auth.h"
#include "server/listen_address.h"
#include "server/logger.h"
#include "server/lsp_server.h"
#include "support/child_process.h"
#include "support/files.h"

#include <csignal>
#include <iostream>
#include <thread>

namespace {

struct serve_options {
  std::string listen;  // unix, unix:PATH or HOST:PORT; empty for stdio
  std::string token_file;  // TCP: where the token is written (default in the runtime folder)
  bool stdio = false;  // --stdio: what LSP clients pass; stdio is the default anyway
  int client_process_id = 0;
  std::string log_file;
  std::string log_level = "info";
  std::size_t max_message_mib = 64;
};

// Removes the token file when the listener no longer needs it (the client has proven it).
struct token_file_guard {
  std::filesystem::path path;
  ~token_file_guard() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

std::unique_ptr<kblaster::server::transport> open_transport(const serve_options& opts, kblaster::server::logger& log) {
  using namespace kblaster::server;
  if (opts.listen.empty()) {
    if (!opts.token_file.empty()) throw std::runtime_error("--token-file is for --listen HOST:PORT");
    return make_stdio_transport();
  }
  const listen_address address = parse_listen_address(opts.listen);  // throws naming --listen
  // On stderr so that scripts (and tests using port 0) can read where we listen.
  if (const auto* unix_socket = std::get_if<unix_address>(&address)) {
    if (!opts.token_file.empty()) throw std::runtime_error("--token-file is for TCP; a Unix socket checks the peer's uid instead");
    return make_unix_transport(unix_socket->path, log, [&] {
      std::cerr << "kblaster: listening on unix:" << unix_socket->path.string() << std::endl;
    });
  }
  const auto& tcp = std::get<tcp_address>(address);
  const tcp_secret secret{random_token(), std::chrono::seconds(10)};
  token_file_guard token_file;
  return make_tcp_transport(tcp.host, tcp.port, secret, log, [&](std::uint16_t port) {
    // The port is known only now (port 0), and the default file is named after it, so that
    // two daemons never share one.
    token_file.path = opts.token_file.empty()
                          ? kblaster::support::user_runtime_dir() / ("tcp-" + std::to_string(port) + ".token")
                          : std::filesystem::path(opts.token_file);
    kblaster::support::write_secret_file(token_file.path, secret.token + "\n");
    // The path, never the token: stderr may end up in a log.
    std::cerr << "kblaster: token in " << token_file.path.string() << std::endl;
    std::cerr << "kblaster: listening on " << to_string(tcp_address{tcp.host, port}) << std::endl;
  });
}

int run_serve(const serve_options& opts) {
  // A client that disappears must not kill the daemon with SIGPIPE mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  using namespace kblaster::server;
  if (opts.stdio && !opts.listen.empty()) throw std::runtime_error("--stdio and --listen exclude each other");
  const auto level = parse_log_level(opts.log_level);
  if (!level) throw std::runtime_error("--log-level: unknown level '" + opts.log_level + "'");
  logger log(*level, opts.log_file.empty() ? logger::default_file() : std::filesystem::path(opts.log_file));

  const auto io = open_transport(opts, log);
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
  app->add_option("--listen", opts->listen,
                  "Listen on a Unix socket (unix, or unix:PATH; only this user may connect) or on HOST:PORT "
                  "(loopback only; the client first sends `KBLASTER-TOKEN <token>` from the token file) instead of stdio");
  app->add_option("--token-file", opts->token_file,
                  "With --listen HOST:PORT: write the token here (mode 0600; default $XDG_RUNTIME_DIR/kblaster/tcp-PORT.token)");
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
