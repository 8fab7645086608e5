// The stdio transport: the protocol owns stdin and stdout; logs go to stderr.
#include "server/fd_transport.h"

#include <unistd.h>

namespace kblaster::server {

std::unique_ptr<transport> make_stdio_transport() {
  return std::make_unique<fd_transport>(STDIN_FILENO, STDOUT_FILENO, /*owns_fds=*/false);
}

}  // namespace kblaster::server
