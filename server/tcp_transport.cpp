// The TCP transport: Boost.Asio listens on loopback and accepts one client, whose socket then
// runs through the same fd_transport as stdio.
#include "server/fd_transport.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>

#include <stdexcept>

namespace kblaster::server {

std::unique_ptr<transport> make_tcp_transport(const std::string& host, std::uint16_t port,
                                              const std::function<void(std::uint16_t)>& on_listening) {
  namespace asio = boost::asio;
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
  if (!ec) acceptor.listen(1, ec);
  if (ec) throw std::runtime_error("--listen " + host + ":" + std::to_string(port) + ": " + ec.message());
  on_listening(acceptor.local_endpoint().port());

  asio::ip::tcp::socket socket(io);
  acceptor.accept(socket, ec);
  if (ec) throw std::runtime_error("accepting a client failed: " + ec.message());
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  const int fd = socket.release(ec);
  if (ec) throw std::runtime_error("cannot take over the client socket: " + ec.message());
  return std::make_unique<fd_transport>(fd, fd, /*owns_fds=*/true);
}

}  // namespace kblaster::server
