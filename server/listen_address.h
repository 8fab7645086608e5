// Where `kblaster serve --listen` listens: a Unix domain socket (`unix` or `unix:PATH`) or TCP
// on loopback (`HOST:PORT`), parsed once into a typed value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>

namespace kblaster::server {

/// A Unix domain socket; the path is never empty once parsed (`unix` alone names the default).
struct unix_address {
  std::filesystem::path path;
};

/// TCP on a loopback address; port 0 lets the kernel pick one.
struct tcp_address {
  std::string host;
  std::uint16_t port = 0;
};

using listen_address = std::variant<unix_address, tcp_address>;

/// The default socket: user_runtime_dir()/kblaster.sock ($XDG_RUNTIME_DIR/kblaster/kblaster.sock).
std::filesystem::path default_socket_path();

/// Parses `--listen`'s value. Throws std::invalid_argument naming the option and what is wrong.
listen_address parse_listen_address(std::string_view text);

/// "unix:PATH" or "HOST:PORT", as the daemon prints where it listens.
std::string to_string(const listen_address& address);

}  // namespace kblaster::server
