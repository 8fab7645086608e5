#include "support/device_lock.h"

#include "support/files.h"
#include "support/stop_wait.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace kblaster::support {
namespace fs = std::filesystem;

namespace {

std::string file_name_of(const std::string& device) {
  std::string out;
  for (const char c : device) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return (out.empty() ? "device" : out) + ".lock";
}

std::string read_holder(int fd) {
  char buf[256];
  const auto got = ::pread(fd, buf, sizeof buf - 1, 0);
  if (got <= 0) return "another kblaster process";
  std::string text(buf, static_cast<std::size_t>(got));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "another kblaster process" : text;
}

}  // namespace

std::string device_lock::gpu(const std::string& visible) {
  const auto first = visible.substr(0, visible.find(','));
  return "gpu-" + (first.empty() ? std::string("0") : first);
}

namespace {

// Takes `fd`'s flock, looked at every 5 ms (another process's unlock signals nothing here);
// false when stopped first. `busy` is called on every poll that finds the lock taken.
bool lock_polled(int fd, const fs::path& path, std::stop_token stop, const std::function<void()>& busy) {
  const auto taken = [&] {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) throw file_error("cannot lock " + path.string() + ": " + std::strerror(errno));
    if (!stop.stop_requested()) busy();
    return false;
  };
  return wait_until(taken, stop, std::chrono::milliseconds(5));
}

unique_fd open_lock_file(const fs::path& path) {
  unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) throw file_error("cannot open the device lock " + path.string() + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

std::optional<device_lock> device_lock::acquire(const std::string& device, const std::string& doing, std::stop_token stop,
                                                const std::function<void(const std::string&)>& waiting,
                                                const fs::path& dir) {
  const fs::path folder = dir.empty() ? private_directory(user_runtime_dir() / "devices") : dir;
  const fs::path path = folder / file_name_of(device);
  // Turns: whoever waits holds the queue's lock, and a holder must take it too before its next
  // request, so a run that asks again at once cannot keep a waiting profile on save out for
  // the whole of its run.
  const fs::path queue_path = folder / (file_name_of(device) + ".next");
  unique_fd queue = open_lock_file(queue_path);
  unique_fd fd = open_lock_file(path);
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  const auto tell = [&] {  // once per wait, over both locks
    if (!told && waiting) waiting(read_holder(fd.get()));
    told = true;
  };
  if (!lock_polled(queue.get(), queue_path, stop, tell)) return std::nullopt;
  if (!lock_polled(fd.get(), path, stop, tell)) return std::nullopt;
  queue.reset();  // the next in line may queue now
  // Who holds it, for whoever waits next.
  const std::string holder = "pid " + std::to_string(::getpid()) + ": " + doing + "\n";
  if (::ftruncate(fd.get(), 0) == 0) (void)!::pwrite(fd.get(), holder.data(), holder.size(), 0);
  return device_lock(std::move(fd), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace kblaster::support
