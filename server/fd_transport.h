// A transport over a pair of file descriptors: a poll() reader that a self-pipe can wake, and
// a writer thread that drains a queue. One code path for pipes, ttys, regular files (which
// epoll, and so Asio's reactor, refuses) and accepted sockets.
#pragma once

#include "server/transport.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kblaster::server {

class fd_transport final : public transport {
 public:
  /// Does not take ownership of the descriptors unless `owns_fds`.
  fd_transport(int in_fd, int out_fd, bool owns_fds);
  ~fd_transport() override;
  fd_transport(const fd_transport&) = delete;
  fd_transport& operator=(const fd_transport&) = delete;

  void run(const std::function<void(std::string_view)>& on_bytes) override;
  void write(std::string bytes) override;
  void close() override;

 private:
  void writer_loop();

  int in_fd_, out_fd_;
  bool owns_fds_;
  int wake_[2] = {-1, -1};  // self-pipe that interrupts poll() in run()

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> queue_;
  bool stopping_ = false;
  bool broken_ = false;  // the peer went away; further writes are dropped
  std::thread writer_;
};

}  // namespace kblaster::server
