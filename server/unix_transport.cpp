// The Unix-socket transport: a socket file only this user can open (0600, in a folder no one
// else can write), and a peer check (SO_PEERCRED) on every connection, since root and a bug in
// the folder's permissions would otherwise still let another user in.
#include "server/connection_auth.h"
#include "server/fd_transport.h"
#include "server/logger.h"
#include "support/files.h"
#include "support/unique_fd.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace kblaster::server {

namespace {

namespace fs = std::filesystem;

std::runtime_error listen_error(const fs::path& path, const std::string& why) {
  return std::runtime_error("--listen unix:" + path.string() + ": " + why);
}

sockaddr_un address_of(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof addr.sun_path)
    throw listen_error(path, "the path is longer than a socket path may be (" + std::to_string(sizeof addr.sun_path - 1) +
                                 " bytes)");
  std::memcpy(addr.sun_path, path.c_str(), path.string().size() + 1);
  return addr;
}

// The folder must be one no other user can write: otherwise they could replace our socket with
// theirs and receive the editor's connection. Our own runtime folder is made 0700; a folder the
// user named is created 0700 when missing and checked, never chmodded, when present.
void check_folder(const fs::path& path) {
  const fs::path dir = path.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    try {
      support::private_directory(dir);
    } catch (const support::file_error& e) {
      throw listen_error(path, e.what());
    }
    return;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw listen_error(path, dir.string() + " is not a folder");
  if (st.st_uid != ::geteuid()) throw listen_error(path, dir.string() + " belongs to another user");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw listen_error(path, dir.string() + " is writable by other users; put the socket in a folder of your own "
                                            "(the default, `--listen unix`, is $XDG_RUNTIME_DIR/kblaster/kblaster.sock)");
}

// One daemon per socket path: the listening daemon holds an exclusive lock on PATH.lock (never
// removed, so that two daemons never lock two different files of one name). Asking the socket
// itself whether someone listens would not do: that someone would take the question for its
// client. The lock is released when the listener closes, with the descriptor.
support::unique_fd lock_socket_path(const fs::path& path) {
  const fs::path lock_path = path.string() + ".lock";
  support::unique_fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock) throw listen_error(path, "cannot open " + lock_path.string() + ": " + std::strerror(errno));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) throw listen_error(path, "another daemon is listening there");
  return lock;
}

// A socket file left by a daemon that died (we hold the lock now) is removed.
void clear_stale_socket(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) throw listen_error(path, "the path exists and is not a socket");
  if (::unlink(path.c_str()) != 0) throw listen_error(path, std::string("cannot remove the stale socket: ") + std::strerror(errno));
}

// Removes the socket file when the listener closes.
struct socket_file {
  fs::path path;
  ~socket_file() { ::unlink(path.c_str()); }
};

}  // namespace

std::unique_ptr<transport> make_unix_transport(const fs::path& path, logger& log, const std::function<void()>& on_listening) {
  const sockaddr_un addr = address_of(path);
  check_folder(path);
  const support::unique_fd lock = lock_socket_path(path);
  clear_stale_socket(path);
  support::unique_fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) throw listen_error(path, std::string("socket: ") + std::strerror(errno));
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw listen_error(path, std::string("bind: ") + std::strerror(errno));
  const socket_file remove_at_close{path};
  // bind() honours the umask; the folder keeps others out meanwhile, and this makes it exact.
  if (::chmod(path.c_str(), 0600) != 0) throw listen_error(path, std::string("chmod: ") + std::strerror(errno));
  if (::listen(listener.get(), 4) != 0) throw listen_error(path, std::string("listen: ") + std::strerror(errno));
  on_listening();

  for (;;) {
    support::unique_fd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      throw listen_error(path, std::string("accept: ") + std::strerror(errno));
    }
    if (const auto why = peer_refusal(peer_credentials_of(client.get()), ::geteuid())) {
      log.warn("refused a connection on unix:" + path.string() + ": " + *why);
      continue;  // closed unserved
    }
    log.info("accepted a client on unix:" + path.string());
    const int raw = client.release();
    return std::make_unique<fd_transport>(raw, raw, /*owns_fds=*/true);
  }
}

}  // namespace kblaster::server
