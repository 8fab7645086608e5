// Who may talk to the daemon: the peer check of a Unix socket (SO_PEERCRED: the same user
// only) and the secret token a TCP client proves first. Both answer with the reason a
// connection is refused, for the log; neither ever puts a token in that reason.
//
// The TCP handshake: before any LSP message, the client sends one line
//     KBLASTER-TOKEN <64 hex digits>\n
// holding the token the daemon wrote to its 0600 token file. Anything else (an LSP header, a
// wrong token, silence past the deadline) closes the connection with nothing served.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace kblaster::server {

/// The other end of a Unix socket, as the kernel reports it.
struct peer_credentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

/// SO_PEERCRED of a connected Unix socket; nullopt when the kernel does not say.
std::optional<peer_credentials> peer_credentials_of(int fd);

/// Why `peer` may not use a daemon run by uid `owner` (nullopt: it may). Only the owner itself
/// is admitted, root included: a daemon runs code as its user, for that user alone.
std::optional<std::string> peer_refusal(const std::optional<peer_credentials>& peer, uid_t owner);

/// The line a TCP client sends first, without its newline: "KBLASTER-TOKEN ".
inline constexpr std::string_view token_line_prefix = "KBLASTER-TOKEN ";

/// A fresh token: `bytes` random bytes from /dev/urandom as lower-case hex. Throws
/// std::runtime_error when the random source cannot be read.
std::string random_token(std::size_t bytes = 32);

/// Compares in time that depends on the lengths only, not on where the first difference is.
bool constant_time_equal(std::string_view a, std::string_view b);

/// Reads the token line from `fd` (byte by byte, so that nothing after it is consumed) within
/// `deadline` and checks it against `token`. nullopt when it matches; else why not, without
/// the token or what the client sent.
std::optional<std::string> check_token_line(int fd, std::string_view token, std::chrono::milliseconds deadline);

}  // namespace kblaster::server
