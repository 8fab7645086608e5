// The TCP transport: Boost.Asio listens on loopback and accepts clients until one proves the
// token; that client's socket then runs through the same fd_transport as stdio.
#include "server/connection_auth.h"
#include "server/fd_transport.h"
#include "server/logger.h"
#include "support/unique_fd.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>

#include <stdexcept>

namespace kblaster::server {

std::unique_ptr<transport> make_tcp_transport(const std::string& host, std::uint16_t port, const tcp_secret& secret,
                                              logger& log, const std::function<void(std::uint16_t)>& on_listening) {
  namespace asio = boost::asio;
  if (secret.token.empty()) throw std::invalid_argument("a TCP listener needs a token");
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) throw std::runtime_error("--listen: '" + host + "' is not an IP address");
  // The daemon runs compilers and profilers on request: never expose it beyond this machine.
  if (!address.is_loopback()) throw std::runtime_error("--listen: only loopback addresses are allowed, not " + host);

  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io);
  const asio::ip::tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(4, ec);
  if (ec) throw std::runtime_error("--listen " + host + ":" + std::to_string(port) + ": " + ec.message());
  on_listening(acceptor.local_endpoint().port());

  // Loopback is no boundary between the users of a shared machine: whoever connects first must
  // still prove the token, and one who cannot is turned away while the daemon keeps waiting.
  for (;;) {
    asio::ip::tcp::socket socket(io);
    asio::ip::tcp::endpoint peer;
    acceptor.accept(socket, peer, ec);
    if (ec == asio::error::interrupted || ec == asio::error::connection_aborted) continue;
    if (ec) throw std::runtime_error("accepting a client failed: " + ec.message());
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    support::unique_fd fd(socket.release(ec));
    if (ec) throw std::runtime_error("cannot take over the client socket: " + ec.message());
    const std::string who = peer.address().to_string() + ":" + std::to_string(peer.port());
    if (const auto why = check_token_line(fd.get(), secret.token, secret.deadline)) {
      log.warn("refused a TCP connection from " + who + ": " + *why);
      continue;  // closed unserved
    }
    log.info("accepted a TCP client from " + who + " (token proven)");
    const int raw = fd.release();
    return std::make_unique<fd_transport>(raw, raw, /*owns_fds=*/true);
  }
}

}  // namespace kblaster::server
