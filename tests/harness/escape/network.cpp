// network: connects to a listener harness_check opened on loopback (TCP) and to a Unix socket it
// opened in the user's scratch folder (where a daemon's socket would be), and sends a byte.
// kblaster-expect: contained
#include "escape_probe.h"

#include <arpa/inet.h>
#include <dlpack/dlpack.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

extern "C" int kb_forward(const DLTensor*, int, DLTensor*, int, void*) {
  int escaped = 0;
  const std::string port = escape::read_probe("port");
  if (!port.empty()) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<unsigned short>(std::stoi(port)));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && write(s, "k", 1) == 1) escaped = 1;
    if (s >= 0) close(s);
  }
  const std::string path = escape::read_probe("unix_socket");
  if (!path.empty() && path.size() < sizeof(sockaddr_un::sun_path)) {
    const int s = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && write(s, "k", 1) == 1) escaped = 1;
    if (s >= 0) close(s);
  }
  return escaped ? escape::kEscaped : 0;
}
