// libFuzzer target: the daemon's dispatch and every LSP feature, from client messages to replies.
//
// An input is one session: each line is the body of one message from the client (JSON-RPC),
// framed here; framing itself has its own target (fuzz_framing), and a body whose length the
// mutator had to keep consistent would rarely get past the reader. Unless the first line is an
// initialize request, the session starts with this file's own initialize (a capable client that
// trusts its workspace, so that the commands that run code are reached too).
//
// Why it is built this way: the first version kept one server with its worker pool across
// inputs and fed it raw bytes from the fuzzer's thread; it managed 2 to 53 inputs a second, its
// findings depended on the inputs before them, and a frame left incomplete by one input
// swallowed the next. Here every input gets a fresh server, built with
// server_options::single_thread: no thread is started, the work each message posts runs on this
// thread before the next message is read (the transport runs the io_context), and the server's
// requests to the client are answered while they are being written. No child process is
// started either: support::stop_all_children() at start-up makes every spawn fail at once (the
// analysis's nvcc, ncu, the harness), as on a machine without the tools.
#include "fuzz_input.h"
#include "jsonrpc_check.h"
#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "server/lsp_server.h"
#include "support/child_process.h"

#include <boost/asio/io_context.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using kblaster::protocol::frame;
using kblaster::protocol::frame_event;
using kblaster::protocol::frame_reader;
using kblaster::protocol::json;

/// The client's side of one session, in memory, all on the fuzzer's thread.
class session_transport final : public kblaster::server::transport {
 public:
  session_transport(std::vector<std::string> frames, boost::asio::io_context& work)
      : frames_(std::move(frames)), work_(work) {}

  void run(const std::function<void(std::string_view)>& on_bytes) override {
    on_bytes_ = &on_bytes;
    for (const auto& f : frames_) {
      if (closed_) break;
      deliver(f);
      // What the message started (handlers, analysis) finishes before the next is read.
      work_.restart();
      work_.run();
    }
    on_bytes_ = nullptr;
  }

  void write(std::string bytes) override {
    output_.feed(bytes);
    while (auto e = output_.next()) {
      // Everything the server says must be a well-framed, valid JSON-RPC message.
      if (e->what != frame_event::kind::body) std::abort();
      const auto facts = kblaster::fuzz::check_jsonrpc(e->text);
      if (!facts.valid) std::abort();
      if (!facts.request) continue;
      // The server asks the client something and waits for nothing on a single thread: answer
      // now (or right after the message being read, if it asked from the reading itself).
      const json m = json::parse(e->text);
      const json result = m["method"] == "workspace/applyEdit" ? json{{"applied", true}} : json();
      answers_.push_back(frame(kblaster::protocol::make_result(m["id"], result).dump()));
      if (!reading_) flush_answers();
    }
  }

  void close() override { closed_ = true; }

 private:
  void deliver(const std::string& bytes) {
    reading_ = true;
    (*on_bytes_)(bytes);
    reading_ = false;
    flush_answers();
  }
  void flush_answers() {
    while (!answers_.empty() && on_bytes_) {
      std::string a = std::move(answers_.front());
      answers_.erase(answers_.begin());
      deliver(a);
    }
  }

  std::vector<std::string> frames_;
  boost::asio::io_context& work_;
  const std::function<void(std::string_view)>* on_bytes_ = nullptr;
  std::vector<std::string> answers_;
  frame_reader output_;
  bool reading_ = false;
  bool closed_ = false;
};

/// This file's initialize and initialized, framed once: the session a client that says nothing
/// more would have (capable, trusting its workspace, no ncu).
const std::vector<std::string>& default_start() {
  static const std::vector<std::string> frames = [] {
    const json capabilities = {
        {"window", {{"workDoneProgress", true}}},
        {"textDocument", {{"codeAction", {{"disabledSupport", true}}}}},
        {"workspace",
         {{"applyEdit", true},
          {"codeLens", {{"refreshSupport", true}}},
          {"workspaceEdit", {{"documentChanges", true}, {"resourceOperations", {"create"}}}}}}};
    const json options = {{"workspaceTrusted", true}, {"kblaster", {{"ncuPath", "/nonexistent/ncu"}}}};
    return std::vector<std::string>{
        frame(json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                   {"params", {{"capabilities", capabilities}, {"initializationOptions", options}}}}
                  .dump()),
        frame(R"({"jsonrpc":"2.0","method":"initialized","params":{}})")};
  }();
  return frames;
}

/// The session's messages, framed: the input's lines, after this file's initialize unless the
/// input starts with its own.
std::vector<std::string> session_frames(std::string_view input) {
  std::vector<std::string> frames;
  bool first = true;
  while (!input.empty()) {
    const auto end = input.find('\n');
    const std::string_view line = input.substr(0, end);
    input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
    if (line.empty()) continue;
    if (first && kblaster::fuzz::check_jsonrpc(line).method != "initialize") frames = default_start();
    first = false;
    frames.push_back(frame(std::string(line)));
  }
  return frames;
}

std::filesystem::path home;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Hermetic: every per-user file (KB, caches, logs, the analysis's copies) in a scratch folder
  // removed at exit, no tool found on PATH, and no child process started at all.
  home = std::filesystem::temp_directory_path() / ("kblaster-fuzz-lsp-" + std::to_string(::getpid()));
  std::filesystem::create_directories(home);
  ::setenv("PATH", "/nonexistent", 1);
  ::unsetenv("CUDA_HOME");
  for (const char* var : {"HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME",
                          "XDG_RUNTIME_DIR", "TMPDIR"})
    ::setenv(var, home.c_str(), 1);
  kblaster::support::stop_all_children();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(home, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::asio::io_context work;
  session_transport io(session_frames(kblaster::fuzz::as_text(data, size)), work);
  kblaster::server::logger log(kblaster::server::log_level::error, {}, false);
  kblaster::server::server_options options;
  options.single_thread = &work;
  options.max_message_bytes = 1 << 16;
  {
    kblaster::server::lsp_server server(io, log, options);
    server.run();
  }
  // The analysis keeps a copy of each text it saw; an input's must not outlive it.
  std::error_code ec;
  std::filesystem::remove_all(home / ("kblaster-" + std::to_string(::getuid())) / "analysis", ec);
  return 0;
}
