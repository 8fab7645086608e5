// poll()-based reader and queue-draining writer over file descriptors.
#include "server/fd_transport.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace kblaster::server {

fd_transport::fd_transport(int in_fd, int out_fd, bool owns_fds)
    : in_fd_(in_fd), out_fd_(out_fd), owns_fds_(owns_fds) {
  if (::pipe(wake_) != 0) throw std::runtime_error("cannot create the transport's wake-up pipe");
  writer_ = std::thread([this] { writer_loop(); });
}

fd_transport::~fd_transport() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  writer_.join();  // flushes whatever is queued: the last reply must reach the client
  ::close(wake_[0]);
  ::close(wake_[1]);
  if (owns_fds_) {
    ::close(in_fd_);
    if (out_fd_ != in_fd_) ::close(out_fd_);
  }
}

void fd_transport::run(const std::function<void(std::string_view)>& on_bytes) {
  char buffer[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;  // a debugger or a signal; not an error
      return;
    }
    if (fds[1].revents) return;  // close() was called
    if (!fds[0].revents) continue;
    const ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;  // end of stream or a dead peer
    on_bytes(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

void fd_transport::write(std::string bytes) {
  {
    std::lock_guard lock(mutex_);
    if (broken_) return;
    queue_.push_back(std::move(bytes));
  }
  ready_.notify_one();
}

void fd_transport::close() {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], &byte, 1);
}

void fd_transport::writer_loop() {
  for (;;) {
    std::string bytes;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      bytes = std::move(queue_.front());
      queue_.pop_front();
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // EPIPE and friends: the client is gone; stop writing, keep serving reads
        std::lock_guard lock(mutex_);
        broken_ = true;
        queue_.clear();
        break;
      }
      done += static_cast<std::size_t>(n);
    }
  }
}

}  // namespace kblaster::server
