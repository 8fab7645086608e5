// Byte transports for the LSP connection: stdio (default), a Unix domain socket, and TCP on
// loopback. The socket transports admit one client, and only one that proves who it is
// (server/connection_auth.h); every refused connection is logged and closed unserved.
//
// The server sees only this interface; the concrete classes live in their .cpp files behind
// factories, and tests can supply their own. Framing is not the transport's business.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kblaster::server {

class transport {
 public:
  virtual ~transport() = default;

  /// Reads until the peer closes or close() is called, handing each chunk to `on_bytes` on the
  /// calling thread (the I/O thread). Returns normally at end of stream.
  virtual void run(const std::function<void(std::string_view)>& on_bytes) = 0;

  /// Queues bytes for the peer. Thread-safe; writes keep their order and never interleave.
  virtual void write(std::string bytes) = 0;

  /// Makes run() return soon; thread-safe; queued writes are still flushed.
  virtual void close() = 0;
};

/// The process's stdin and stdout.
std::unique_ptr<transport> make_stdio_transport();

class logger;

/// Listens on a Unix domain socket at `path` (mode 0600, in a folder no other user can write:
/// created 0700 when missing), calls `on_listening`, and accepts the first client whose uid
/// (SO_PEERCRED) is the daemon's; others are logged and closed. The socket file is removed
/// once the client is accepted (nothing more is accepted). Throws std::runtime_error naming the
/// path when it cannot listen (another daemon there, an unsafe folder, a path too long).
std::unique_ptr<transport> make_unix_transport(const std::filesystem::path& path, logger& log,
                                               const std::function<void()>& on_listening);

/// What a TCP client must prove before it is served.
struct tcp_secret {
  std::string token;                                  ///< random_token(): 64 hex digits
  std::chrono::milliseconds deadline{10000};          ///< for the token line after connecting
};

/// Listens on host:port (loopback only; port 0 picks one), calls `on_listening` with the real
/// port, and accepts the first client that sends the token line (connection_auth.h); others
/// are logged (peer address and why, never the token) and closed. Throws std::runtime_error on
/// a non-loopback host or a bind error.
std::unique_ptr<transport> make_tcp_transport(const std::string& host, std::uint16_t port, const tcp_secret& secret,
                                              logger& log, const std::function<void(std::uint16_t)>& on_listening);

}  // namespace kblaster::server
