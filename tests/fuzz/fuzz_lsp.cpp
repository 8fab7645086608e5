// libFuzzer target: the daemon's dispatch, from raw client bytes to replies.
//
// Why it is built this way: the first version made a server per input (a worker pool, i.e.
// threads, per input), waited up to its timeout for answers to the server's own requests
// (window/workDoneProgress/create) that nobody sent, and let didOpen start the analysis, which
// sleeps its debounce and runs nvcc; it managed 53 inputs a second. Here one server lives
// across inputs on its own I/O thread, fed through an in-memory transport that answers the
// server's requests at once; after each input, the requests it made are cancelled and an
// ordered "fuzz/sync" request marks the end of its work. The analysis runs with no debounce
// and no compilers on PATH. The server is replaced after `exit` or `shutdown`, and every
// `reuse` inputs so that documents opened by earlier inputs do not pile up.
#include "fuzz_input.h"
#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "server/lsp_server.h"

#include <stdlib.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

namespace {

using kblaster::protocol::frame;
using kblaster::protocol::frame_event;
using kblaster::protocol::frame_reader;
using kblaster::protocol::json;

constexpr int reuse = 512;

/// The client side, in memory. Thread-safe: the fuzzer thread feeds, the I/O thread reads, any
/// worker writes.
class session_transport final : public kblaster::server::transport {
 public:
  /// Queues `chunks` and returns once the reply to the request with id `sync` has been written,
  /// or the server has closed the connection.
  void feed_until(std::deque<std::string> chunks, const json& sync) {
    std::unique_lock lock(mutex_);
    sync_ = sync;
    synced_ = false;
    for (auto& c : chunks) input_.push_back(std::move(c));
    more_.notify_all();
    done_.wait(lock, [&] { return synced_ || closed_; });
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  void run(const std::function<void(std::string_view)>& on_bytes) override {
    std::unique_lock lock(mutex_);
    for (;;) {
      more_.wait(lock, [&] { return closed_ || !input_.empty(); });
      if (closed_) return;
      const std::string chunk = std::move(input_.front());
      input_.pop_front();
      lock.unlock();
      on_bytes(chunk);
      lock.lock();
    }
  }
  void write(std::string bytes) override {
    std::lock_guard lock(mutex_);
    output_.feed(bytes);
    while (auto e = output_.next()) {
      // Everything the server says must be a well-framed, valid JSON-RPC message.
      if (e->what != frame_event::kind::body) std::abort();
      const json m = json::parse(e->text, nullptr, false);
      if (m.is_discarded() || !m.is_object() || m.value("jsonrpc", "") != "2.0") std::abort();
      const auto id = m.find("id");
      if (id == m.end()) continue;
      if (m.contains("method")) {
        // The server asks the client something: answer at once, so that it never waits out a timeout.
        input_.push_back(frame(kblaster::protocol::make_result(*id, nullptr).dump()));
        more_.notify_all();
      } else if (*id == sync_) {
        synced_ = true;
        done_.notify_all();
      }
    }
  }
  void close() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    more_.notify_all();
    done_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable more_, done_;
  std::deque<std::string> input_;
  frame_reader output_;
  json sync_;
  bool synced_ = false;
  bool closed_ = false;
};

/// A server on its own I/O thread, initialized, with the fuzz/sync request registered.
class session {
 public:
  session() : log_(kblaster::server::log_level::error, {}, false) {
    kblaster::server::server_options options;
    options.worker_threads = 2;
    options.max_message_bytes = 1 << 16;
    server_ = std::make_unique<kblaster::server::lsp_server>(io_, log_, options);
    server_->features().on_request("fuzz/sync", kblaster::server::execution::ordered,
                                   [](const json&, kblaster::server::request_context&) { return json(); });
    io_thread_ = std::thread([this] { server_->run(); });
    const json init = {{"jsonrpc", "2.0"}, {"id", "fuzz-init"}, {"method", "initialize"},
                       {"params", {{"capabilities", {{"window", {{"workDoneProgress", true}}}}},
                                   {"initializationOptions",
                                    {{"kblaster", {{"analysis", {{"debounceMs", 0}}}, {"profileOnSave", false}}}}}}}};
    io_.feed_until({frame(init.dump())}, "fuzz-init");
  }
  ~session() {
    io_.close();
    io_thread_.join();
    server_.reset();  // waits for the workers
  }
  /// Feeds one input; false when the server has ended or shut down and must be replaced.
  bool feed(std::deque<std::string> chunks, const std::vector<json>& requests) {
    // Cancel what the input started (a self-test may sleep for minutes), then wait for the
    // ordered queue to drain.
    for (const auto& id : requests)
      chunks.push_back(frame(json{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", id}}}}.dump()));
    const json sync = "fuzz-sync-" + std::to_string(++inputs_);
    chunks.push_back(frame(json{{"jsonrpc", "2.0"}, {"id", sync}, {"method", "fuzz/sync"}}.dump()));
    io_.feed_until(std::move(chunks), sync);
    return !io_.closed() && !server_->shutdown_requested() && inputs_ < reuse;
  }

 private:
  session_transport io_;
  kblaster::server::logger log_;
  std::unique_ptr<kblaster::server::lsp_server> server_;
  std::thread io_thread_;
  int inputs_ = 0;
};

/// Ids of the requests in `input` (read with the server's own frame reader).
std::vector<json> request_ids(std::string_view input) {
  std::vector<json> ids;
  frame_reader reader(1 << 16);
  reader.feed(input);
  while (auto e = reader.next()) {
    if (e->what != frame_event::kind::body) continue;
    const json m = json::parse(e->text, nullptr, false);
    if (m.is_object() && m.contains("id") && m.contains("method")) ids.push_back(m["id"]);
  }
  return ids;
}

std::unique_ptr<session> current;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Hermetic: no compiler or profiler to start, and every per-user file (KB, caches, logs) in a
  // scratch folder removed at exit.
  static std::string home = std::filesystem::temp_directory_path() / ("kblaster-fuzz-lsp-" + std::to_string(::getpid()));
  std::filesystem::create_directories(home);
  ::setenv("PATH", "/nonexistent", 1);
  for (const char* var : {"HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "TMPDIR"})
    ::setenv(var, home.c_str(), 1);
  std::atexit([] {
    current.reset();
    std::error_code ec;
    std::filesystem::remove_all(home, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = kblaster::fuzz::as_text(data, size);
  // The first byte picks the chunk size, so that split points vary with the input.
  std::deque<std::string> chunks;
  const std::size_t step = size ? 1 + data[0] % 64 : 1;
  for (std::size_t at = 0; at < size; at += step) chunks.emplace_back(input.substr(at, step));
  if (!current) current = std::make_unique<session>();
  if (!current->feed(std::move(chunks), request_ids(input))) current.reset();
  return 0;
}
