// fuzz_lsp: libFuzzer over framing and dispatch.
//
// Each input is a raw byte stream from a client, fed in chunks whose sizes come from the input
// itself, after a well-formed initialize (so that dispatch past the lifecycle gate is reached).
// The real lsp_server runs over an in-memory transport; its output is checked to be valid framed
// JSON-RPC. Also fuzzes the frame reader alone against a reference split.
#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "server/lsp_server.h"

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>

namespace {

using kblaster::protocol::json;

class fuzz_transport final : public kblaster::server::transport {
 public:
  explicit fuzz_transport(std::deque<std::string> chunks) : chunks_(std::move(chunks)) {}
  void run(const std::function<void(std::string_view)>& on_bytes) override {
    while (!chunks_.empty() && !closed_) {
      on_bytes(chunks_.front());
      chunks_.pop_front();
    }
  }
  void write(std::string bytes) override {
    std::lock_guard lock(mutex_);
    output_.feed(bytes);
    while (auto e = output_.next()) {
      // Everything the server says must be a well-framed, valid JSON-RPC message.
      if (e->what != kblaster::protocol::frame_event::kind::body) std::abort();
      const json m = json::parse(e->text, nullptr, false);
      if (m.is_discarded() || m.value("jsonrpc", "") != "2.0") std::abort();
    }
  }
  void close() override { closed_ = true; }

 private:
  std::deque<std::string> chunks_;
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  kblaster::protocol::frame_reader output_;
};

void fuzz_reader_alone(const std::uint8_t* data, std::size_t size) {
  // Feeding the stream whole or a byte at a time must yield the same bodies. (Above the 8 KiB
  // header cut-off the two can legitimately differ, so only shorter inputs are compared.)
  if (size >= kblaster::protocol::frame_reader::max_header) return;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  kblaster::protocol::frame_reader whole(1 << 12), bytewise(1 << 12);
  std::vector<std::string> a, b;
  whole.feed(input);
  while (auto e = whole.next())
    if (e->what == kblaster::protocol::frame_event::kind::body) a.push_back(e->text);
  for (char c : input) {
    bytewise.feed(std::string_view(&c, 1));
    while (auto e = bytewise.next())
      if (e->what == kblaster::protocol::frame_event::kind::body) b.push_back(e->text);
  }
  if (a != b) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 << 16) return 0;
  fuzz_reader_alone(data, size);

  std::deque<std::string> chunks;
  const std::string init = json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                                {"params", {{"capabilities", {{"window", {{"workDoneProgress", true}}}}}}}}.dump();
  chunks.push_back(kblaster::protocol::frame(init));
  // The first byte picks the chunk size, so that split points vary with the input.
  const std::size_t step = size ? 1 + data[0] % 64 : 1;
  for (std::size_t at = 0; at < size; at += step)
    chunks.emplace_back(reinterpret_cast<const char*>(data) + at, std::min(step, size - at));

  fuzz_transport io(std::move(chunks));
  kblaster::server::logger log(kblaster::server::log_level::error, {}, false);
  kblaster::server::server_options options;
  options.worker_threads = 2;
  options.max_message_bytes = 1 << 16;
  kblaster::server::lsp_server server(io, log, options);
  server.run();  // cancels whatever is still running at the end of the input, then joins
  return 0;
}
