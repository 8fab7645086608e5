// server/listen_address: --listen's forms and the errors that name what is wrong.
#include "server/listen_address.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

using namespace kblaster::server;

TEST_CASE("unix:PATH, HOST:PORT and the default socket") {
  const auto u = parse_listen_address("unix:/run/user/1000/kb.sock");
  REQUIRE(std::holds_alternative<unix_address>(u));
  CHECK(std::get<unix_address>(u).path == "/run/user/1000/kb.sock");
  CHECK(to_string(u) == "unix:/run/user/1000/kb.sock");

  const auto t = parse_listen_address("127.0.0.1:7878");
  REQUIRE(std::holds_alternative<tcp_address>(t));
  CHECK(std::get<tcp_address>(t).host == "127.0.0.1");
  CHECK(std::get<tcp_address>(t).port == 7878);
  const auto v6 = parse_listen_address("[::1]:0");
  CHECK(std::get<tcp_address>(v6).host == "::1");
  CHECK(to_string(v6) == "[::1]:0");

  const std::string dir = "/tmp/kblaster-listen-test-" + std::to_string(::getpid());
  ::setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  const auto d = parse_listen_address("unix");
  REQUIRE(std::holds_alternative<unix_address>(d));
  CHECK(std::get<unix_address>(d).path == dir + "/kblaster/kblaster.sock");
  ::unsetenv("XDG_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad forms are refused with the option named") {
  for (const char* bad : {"7878", "localhost", ":7878", "127.0.0.1:99999", "127.0.0.1:x", "unix:relative.sock"}) {
    CAPTURE(bad);
    try {
      parse_listen_address(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("--listen") != std::string::npos);
    }
  }
}
