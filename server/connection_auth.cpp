// SO_PEERCRED, the random token and the token handshake.
#include "server/connection_auth.h"

#include "support/unique_fd.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace kblaster::server {

std::optional<peer_credentials> peer_credentials_of(int fd) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0 || size != sizeof cred) return std::nullopt;
  return peer_credentials{cred.pid, cred.uid, cred.gid};
}

std::optional<std::string> peer_refusal(const std::optional<peer_credentials>& peer, uid_t owner) {
  if (!peer) return "the kernel did not say who connected (SO_PEERCRED failed)";
  if (peer->uid == owner) return std::nullopt;
  return "uid " + std::to_string(peer->uid) + " (pid " + std::to_string(peer->pid) + ") is not the daemon's user (uid " +
         std::to_string(owner) + ")";
}

std::string random_token(std::size_t bytes) {
  support::unique_fd in(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  if (!in) throw std::runtime_error("cannot open /dev/urandom for the connection token");
  std::string raw(bytes, '\0');
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::read(in.get(), raw.data() + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot read /dev/urandom for the connection token");
    done += static_cast<std::size_t>(n);
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  for (const unsigned char c : raw) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer is visited whatever the contents, so timing tells an attacker the
  // length (which is public: 64 hex digits) and nothing about which digits matched.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::optional<std::string> check_token_line(int fd, std::string_view token, std::chrono::milliseconds deadline) {
  // Long enough for the prefix, the token, and a CR; a line longer than this is not ours.
  const std::size_t longest = token_line_prefix.size() + token.size() + 1;
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "no token line within " + std::to_string(deadline.count() / 1000) + " s";
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends it
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return "the client closed the connection before sending the token";
    if (c == '\n') break;
    line += c;
    // Say no as soon as the bytes cannot become a token line: a client that speaks LSP at once
    // (no token) is refused without waiting for the deadline.
    const std::size_t k = std::min(line.size(), token_line_prefix.size());
    if (line.compare(0, k, token_line_prefix.substr(0, k)) != 0)
      return "the connection did not start with a token line (KBLASTER-TOKEN <hex>)";
    if (line.size() > longest) return "the token line is too long";
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() < token_line_prefix.size()) return "the connection did not start with a token line (KBLASTER-TOKEN <hex>)";
  if (!constant_time_equal(std::string_view(line).substr(token_line_prefix.size()), token)) return "wrong token";
  return std::nullopt;
}

}  // namespace kblaster::server
