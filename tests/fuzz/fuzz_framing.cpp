// libFuzzer target: Content-Length framing and JSON-RPC classification, the first code that
// reads a client's bytes. Feeding the stream whole or a byte at a time must yield the same
// bodies; every body is parsed and classified as the I/O thread does (only rpc_error may leave).
#include "fuzz_input.h"
#include "protocol/framing.h"
#include "protocol/json_rpc.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

using kblaster::protocol::frame_event;
using kblaster::protocol::frame_reader;

std::vector<std::string> bodies(frame_reader& reader) {
  std::vector<std::string> out;
  while (auto e = reader.next())
    if (e->what == frame_event::kind::body) out.push_back(std::move(e->text));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = kblaster::fuzz::as_text(data, size);
  frame_reader whole(1 << 12);
  whole.feed(input);
  const auto a = bodies(whole);
  // Above the 8 KiB header cut-off the two splits can legitimately differ: compare below it.
  if (size < frame_reader::max_header) {
    frame_reader bytewise(1 << 12);
    std::vector<std::string> b;
    for (char c : input) {
      bytewise.feed(std::string_view(&c, 1));
      for (auto& body : bodies(bytewise)) b.push_back(std::move(body));
    }
    if (a != b) std::abort();
  }
  for (const auto& body : a) {
    try {
      const auto message = kblaster::protocol::parse_message(body);
      if (const auto* r = std::get_if<kblaster::protocol::request>(&message))
        (void)kblaster::protocol::id_key(r->id);
    } catch (const kblaster::protocol::rpc_error&) {
    }
  }
  // The reader's output, framed again, must read back as the same bodies.
  std::string reframed;
  for (const auto& body : a) reframed += kblaster::protocol::frame(body);
  frame_reader again(1 << 12);
  again.feed(reframed);
  if (bodies(again) != a) std::abort();
  return 0;
}
