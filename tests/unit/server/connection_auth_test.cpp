// server/connection_auth: the Unix peer check (with fake credentials: a second user needs no
// root here; tests/e2e/connection_auth_test.py runs the real one), the token, and the token
// handshake over a socket pair.
#include "server/connection_auth.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <string>
#include <utility>

using namespace kblaster::server;

namespace {

// Both ends of a connected Unix stream pair, closed at the end of the test.
struct socket_pair {
  int fds[2] = {-1, -1};
  socket_pair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0); }
  ~socket_pair() {
    for (const int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void send(const std::string& bytes) const { REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())); }
  void close_client() { ::close(std::exchange(fds[1], -1)); }
  std::string rest() const {
    char buf[256];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
};

const std::string token(64, 'a');
constexpr std::chrono::milliseconds generous{10000};

}  // namespace

TEST_CASE("only the daemon's own uid is admitted, root included; the refusal names the uid") {
  CHECK_FALSE(peer_refusal(peer_credentials{42, 1000, 1000}, 1000).has_value());
  const auto other = peer_refusal(peer_credentials{42, 1001, 1001}, 1000);
  REQUIRE(other.has_value());
  CHECK(other->find("uid 1001") != std::string::npos);
  CHECK(other->find("pid 42") != std::string::npos);
  CHECK(peer_refusal(peer_credentials{1, 0, 0}, 1000).has_value());
  CHECK(peer_refusal(std::nullopt, 1000).has_value());
}

TEST_CASE("SO_PEERCRED on a socket pair reports this process") {
  socket_pair p;
  const auto cred = peer_credentials_of(p.fds[0]);
  REQUIRE(cred.has_value());
  CHECK(cred->uid == ::geteuid());
  CHECK(cred->pid == ::getpid());
  CHECK_FALSE(peer_refusal(cred, ::geteuid()).has_value());
}

TEST_CASE("tokens are 64 hex digits and differ") {
  const auto a = random_token(), b = random_token();
  CHECK(a.size() == 64);
  for (const char c : a) CHECK(std::isxdigit(static_cast<unsigned char>(c)));
  CHECK(a != b);
}

TEST_CASE("constant_time_equal compares the whole of both") {
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
  CHECK_FALSE(constant_time_equal("", "a"));
  CHECK(constant_time_equal("", ""));
}

TEST_CASE("the right token line is accepted and nothing after it is consumed") {
  socket_pair p;
  p.send("KBLASTER-TOKEN " + token + "\nContent-Length: 2\r\n\r\n{}");
  CHECK_FALSE(check_token_line(p.fds[0], token, generous).has_value());
  CHECK(p.rest() == "Content-Length: 2\r\n\r\n{}");
}

TEST_CASE("a CRLF line ending is accepted") {
  socket_pair p;
  p.send("KBLASTER-TOKEN " + token + "\r\n");
  CHECK_FALSE(check_token_line(p.fds[0], token, generous).has_value());
}

TEST_CASE("a wrong token is refused, and neither token appears in the reason") {
  const std::string wrong(64, 'b');
  socket_pair p;
  p.send("KBLASTER-TOKEN " + wrong + "\n");
  const auto why = check_token_line(p.fds[0], token, generous);
  REQUIRE(why.has_value());
  CHECK(*why == "wrong token");
  CHECK(why->find(token) == std::string::npos);
  CHECK(why->find(wrong) == std::string::npos);
}

TEST_CASE("a prefix of the token, or the token with more, is wrong") {
  for (const std::string& sent : {token.substr(0, 63), token + "a", std::string()}) {
    socket_pair p;
    p.send("KBLASTER-TOKEN " + sent + "\n");
    CHECK(check_token_line(p.fds[0], token, generous).has_value());
  }
}

TEST_CASE("a client that speaks LSP at once is refused at the first byte that cannot start the token line") {
  socket_pair p;
  // The connection stays open: the refusal must not wait for a newline or the deadline.
  p.send("Content-Length: 52\r\n\r\n");
  const auto why = check_token_line(p.fds[0], token, generous);
  REQUIRE(why.has_value());
  CHECK(why->find("did not start with a token line") != std::string::npos);
}

TEST_CASE("a client that closes, or sends an endless line, is refused") {
  {
    socket_pair p;
    p.send("KBLASTER-TOK");
    p.close_client();
    const auto why = check_token_line(p.fds[0], token, generous);
    REQUIRE(why.has_value());
    CHECK(why->find("closed") != std::string::npos);
  }
  {
    socket_pair p;
    p.send("KBLASTER-TOKEN " + token + std::string(100, 'a'));
    const auto why = check_token_line(p.fds[0], token, generous);
    REQUIRE(why.has_value());
    CHECK(why->find("too long") != std::string::npos);
  }
}

TEST_CASE("a client that says nothing is refused at the deadline") {
  socket_pair p;
  const auto why = check_token_line(p.fds[0], token, std::chrono::milliseconds(20));
  REQUIRE(why.has_value());
  CHECK(why->find("no token line") != std::string::npos);
}
