// Content-Length framing: random split points, several messages per read, bad headers.
#include "protocol/framing.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using kblaster::protocol::frame;
using kblaster::protocol::frame_event;
using kblaster::protocol::frame_reader;

namespace {

std::vector<frame_event> drain(frame_reader& reader) {
  std::vector<frame_event> events;
  while (auto e = reader.next()) events.push_back(std::move(*e));
  return events;
}

std::vector<std::string> bodies(const std::vector<frame_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    if (e.what == frame_event::kind::body) out.push_back(e.text);
  return out;
}

std::size_t errors(const std::vector<frame_event>& events) {
  std::size_t n = 0;
  for (const auto& e : events) n += e.what == frame_event::kind::header_error;
  return n;
}

}  // namespace

TEST_CASE("a stream split at random points yields the same bodies in order") {
  std::mt19937 rng(1234);
  std::vector<std::string> expected;
  std::string stream;
  for (int i = 0; i < 200; ++i) {
    std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"x","params":{"s":")" +
                       std::string(rng() % 300, 'a' + i % 26) + "\"}}";
    expected.push_back(body);
    // Every fourth message also carries the optional Content-Type header, in either order.
    if (i % 4 == 1)
      stream += "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body;
    else
      stream += frame(body);
  }
  for (int trial = 0; trial < 50; ++trial) {
    frame_reader reader;
    std::vector<std::string> got;
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t n = std::min<std::size_t>(stream.size() - at, 1 + rng() % (trial < 10 ? 3 : 700));
      reader.feed(std::string_view(stream).substr(at, n));
      at += n;
      for (auto& b : bodies(drain(reader))) got.push_back(b);
    }
    REQUIRE(got == expected);
    CHECK(reader.buffered() == 0);
  }
}

TEST_CASE("several messages in one read") {
  frame_reader reader;
  reader.feed(frame("{\"a\":1}") + frame("{\"b\":2}") + frame("{}"));
  CHECK(bodies(drain(reader)) == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{}"});
}

TEST_CASE("header names are case-insensitive and whitespace around values is allowed") {
  frame_reader reader;
  reader.feed("content-length:   2  \r\n\r\n{}");
  CHECK(bodies(drain(reader)) == std::vector<std::string>{"{}"});
}

TEST_CASE("a header without Content-Length is rejected and the next message still arrives") {
  frame_reader reader;
  reader.feed("Content-Type: application/json\r\n\r\n{\"lost\":true}" + frame("{\"ok\":1}"));
  const auto events = drain(reader);
  CHECK(errors(events) == 1);
  CHECK(bodies(events) == std::vector<std::string>{"{\"ok\":1}"});
}

TEST_CASE("garbled lengths are rejected without losing the stream") {
  for (const std::string bad : {"Content-Length: abc", "Content-Length: -5", "Content-Length: 12x",
                                "Content-Length:", "no colon here", "Content-Length: 2\r\nContent-Length: 3"}) {
    CAPTURE(bad);
    frame_reader reader;
    reader.feed(bad + "\r\n\r\n{}" + frame("{\"next\":1}"));
    const auto events = drain(reader);
    CHECK(errors(events) == 1);
    CHECK(bodies(events) == std::vector<std::string>{"{\"next\":1}"});
  }
}

TEST_CASE("an oversized body is skipped by its declared length, even across reads") {
  frame_reader reader(16);
  const std::string big(40, 'x');
  const std::string stream = frame(big) + frame("{\"small\":1}");
  std::vector<frame_event> events;
  for (char c : stream) {
    reader.feed(std::string_view(&c, 1));
    for (auto& e : drain(reader)) events.push_back(e);
  }
  CHECK(errors(events) == 1);
  CHECK(bodies(events) == std::vector<std::string>{"{\"small\":1}"});
}

TEST_CASE("an endless header is cut off and the reader recovers") {
  frame_reader reader;
  reader.feed(std::string(frame_reader::max_header + 10, 'z'));
  reader.feed("\r\n" + frame("{\"after\":1}"));
  const auto events = drain(reader);
  CHECK(errors(events) >= 1);
  CHECK(bodies(events) == std::vector<std::string>{"{\"after\":1}"});
}

TEST_CASE("the default limit is 64 MiB") { CHECK(frame_reader::default_max_body == 64u * 1024 * 1024); }

TEST_CASE("an empty body is a valid frame") {
  frame_reader reader;
  reader.feed("Content-Length: 0\r\n\r\n");
  const auto events = drain(reader);
  REQUIRE(events.size() == 1);
  CHECK(events[0].what == frame_event::kind::body);
  CHECK(events[0].text.empty());
}
