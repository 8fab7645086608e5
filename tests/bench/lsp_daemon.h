// The benchmarks' LSP client: `kblaster serve` on pipes, framed JSON-RPC both ways, the
// daemon's resident memory from /proc. Requests from the server (progress creation, edits)
// are answered by a handler so that a benchmark can keep timing its own requests meanwhile.
#pragma once

#include "protocol/framing.h"
#include "protocol/json_rpc.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::bench {

using protocol::json;

class lsp_daemon {
 public:
  /// Answers a request from the server: (method, params) -> result.
  using server_request_handler = std::function<json(const std::string&, const json&)>;
  /// Sees every notification from the server.
  using notification_handler = std::function<void(const json&)>;

  /// Starts `binary serve` plus `extra_args` (e.g. --log-file /dev/null).
  lsp_daemon(const char* binary, std::vector<std::string> extra_args) {
    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child)) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      std::vector<std::string> args = {binary, "serve"};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary, argv.data());
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  ~lsp_daemon() {
    close(in_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  lsp_daemon(const lsp_daemon&) = delete;
  lsp_daemon& operator=(const lsp_daemon&) = delete;

  void on_server_request(server_request_handler h) { on_request_ = std::move(h); }
  void on_notification(notification_handler h) { on_notification_ = std::move(h); }

  void send(const json& message) {
    const std::string bytes = protocol::frame(message.dump());
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = write(in_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) throw std::runtime_error("daemon closed its input");
      done += static_cast<std::size_t>(n);
    }
  }
  /// The next message; server requests and notifications go to their handlers first.
  json receive() {
    char buffer[65536];
    for (;;) {
      if (auto event = reader_.next()) {
        json m = json::parse(event->text);
        if (m.contains("method") && m.contains("id")) {
          const json result = on_request_ ? on_request_(m["method"].get<std::string>(), m.value("params", json())) : json();
          send(protocol::make_result(m["id"], result));
        } else if (m.contains("method") && on_notification_) {
          on_notification_(m);
        }
        return m;
      }
      const ssize_t n = read(out_, buffer, sizeof buffer);
      if (n <= 0) throw std::runtime_error("daemon closed its output");
      reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }
  /// Sends a request and returns its reply; replies to other ids go to `other_reply`.
  json call(int id, const std::string& method, json params, const std::function<void(const json&)>& other_reply = {}) {
    send(protocol::make_request(id, method, std::move(params)));
    for (;;) {
      json m = receive();
      if (m.contains("method")) continue;
      if (m.value("id", json()) == id) return m;
      if (other_reply) other_reply(m);
    }
  }
  /// Resident memory of the daemon in KiB (VmRSS), or -1.
  long rss_kib() const { return status_kib("VmRSS:"); }
  /// Peak resident memory of the daemon in KiB (VmHWM), or -1.
  long peak_rss_kib() const { return status_kib("VmHWM:"); }

 private:
  long status_kib(const std::string& key) const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
    return -1;
  }
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  protocol::frame_reader reader_;
  server_request_handler on_request_;
  notification_handler on_notification_;
};

}  // namespace kblaster::bench
