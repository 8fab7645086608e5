// kblaster-harness: the referee (the judge). Reads one JSON request per line on stdin and writes
// one JSON reply per line on stdout (see judge.h and docs/harness.md). Candidates run in their own
// runner processes (kblaster-runner), never in this one; the engine runs this process as a child
// so that even a crash of the judge ends only the harness.
#include "harness/device.h"
#include "harness/judge.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

// The protocol's own stdout. fd 1 is pointed at stderr so that a candidate's printf cannot
// corrupt the replies.
FILE* protocol_out = nullptr;

void send(const nlohmann::json& j) {
  const auto line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), protocol_out);
  std::fflush(protocol_out);
}

}  // namespace

int main(int argc, char** argv) {
  // Host tensors up to 32 MiB (inputs, judge copies, the CPU comparison's temporaries) come from
  // the heap and their memory stays with the process once freed: a judge allocates and frees the
  // same sizes call after call, and faulting fresh pages in each time costs seconds per request
  // where a first touch is slow. Larger blocks are still mapped and returned one by one.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::string device = "auto";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::cout << "usage: kblaster-harness [--device cpu|cuda|auto]\n"
                   "JSON lines on stdin/stdout: {\"id\":1,\"op\":\"evaluate\",\"task\":{...},\"candidate\":\"cand.so\"}\n";
      return 0;
    } else if (a == "--device") {
      std::cerr << "kblaster-harness: " << a << " needs a value (see --help)\n";
      return 2;
    } else {
      std::cerr << "kblaster-harness: unknown argument '" << a << "' (see --help)\n";
      return 2;
    }
  }
  const int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  protocol_out = fd >= 0 ? fdopen(fd, "w") : nullptr;
  if (!protocol_out || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("kblaster-harness: stdout");
    return 1;
  }
  std::unique_ptr<kblaster::harness::judge> s;
  try {
    s = std::make_unique<kblaster::harness::judge>(device);
  } catch (const std::exception& e) {
    send({{"event", "error"}, {"reason", e.what()}});
    return 1;
  }
  // Not dumpable: no process of the same user (a runner above all) may ptrace this one or read
  // its memory through /proc, where the expected outputs are. (After the judge's start-up,
  // which reads /proc/self/exe to find the runner.)
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  send({{"event", "ready"}, {"device", s->device().name()}, {"cuda", s->device().is_cuda()},
        {"pid", static_cast<long>(getpid())}, {"runner", s->runner_filter_state()}});
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json req;
    try {
      req = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      send({{"id", nullptr}, {"verdict", "error"}, {"check", "request"}, {"reason", std::string("not JSON: ") + e.what()}});
      continue;
    }
    if (!req.is_object()) {
      send({{"id", nullptr}, {"verdict", "error"}, {"check", "request"}, {"reason", "a request is a JSON object"}});
      continue;
    }
    if (req.value("op", "") == "shutdown") {
      send({{"id", req.value("id", nlohmann::json())}, {"ok", true}});
      return 0;
    }
    try {
      send(s->handle(req));
    } catch (const kblaster::harness::fatal_device_error& e) {
      // The CUDA context is gone: say why, then exit so that the engine starts a fresh harness.
      send({{"id", req.value("id", nlohmann::json())}, {"verdict", "error"}, {"check", "cuda_fatal"}, {"reason", e.what()},
            {"harness_exits", true}});
      return 3;
    }
  }
  return 0;
}
