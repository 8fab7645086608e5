// Parsing `--listen`.
#include "server/listen_address.h"

#include "support/files.h"

#include <charconv>
#include <stdexcept>

namespace kblaster::server {

std::filesystem::path default_socket_path() { return support::user_runtime_dir() / "kblaster.sock"; }

listen_address parse_listen_address(std::string_view text) {
  if (text == "unix" || text == "unix:") return unix_address{default_socket_path()};
  if (text.rfind("unix:", 0) == 0) {
    const std::filesystem::path path(std::string(text.substr(5)));
    // Relative to what? The daemon's directory is the editor's choice: refuse the ambiguity.
    if (!path.is_absolute()) throw std::invalid_argument("--listen unix:PATH wants an absolute path, not '" + path.string() + "'");
    return unix_address{path};
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    throw std::invalid_argument("--listen wants unix, unix:PATH or HOST:PORT (e.g. 127.0.0.1:7878), not '" +
                                std::string(text) + "'");
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    throw std::invalid_argument("--listen: bad port in '" + std::string(text) + "' (0 to 65535)");
  std::string_view host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [::1]:PORT
  return tcp_address{std::string(host), static_cast<std::uint16_t>(port)};
}

std::string to_string(const listen_address& address) {
  if (const auto* u = std::get_if<unix_address>(&address)) return "unix:" + u->path.string();
  const auto& t = std::get<tcp_address>(address);
  const bool v6 = t.host.find(':') != std::string::npos;
  return (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
}

}  // namespace kblaster::server
