// Byte transports for the LSP connection: stdio (default) and TCP on loopback.
//
// The server sees only this interface; the concrete classes live in their .cpp files behind
// factories, and tests can supply their own. Framing is not the transport's business.
#pragma once

#include <cstdint>
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

/// Listens on host:port (loopback only; port 0 picks one), calls `on_listening` with the real
/// port, and accepts one client. Throws std::runtime_error on a non-loopback host or a bind error.
std::unique_ptr<transport> make_tcp_transport(const std::string& host, std::uint16_t port,
                                              const std::function<void(std::uint16_t)>& on_listening);

}  // namespace kblaster::server
