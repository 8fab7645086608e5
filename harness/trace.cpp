#include "harness/trace.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace kblaster::harness {
namespace {

bool tracing() {
  static const bool on = std::getenv("KBLASTER_HARNESS_TRACE") != nullptr;
  return on;
}

std::chrono::steady_clock::time_point& request_start() {
  static auto start = std::chrono::steady_clock::now();
  return start;
}

}  // namespace

void trace_request(const char* op) {
  if (!tracing()) return;
  request_start() = std::chrono::steady_clock::now();
  std::fprintf(stderr, "[kblaster-harness] request %s\n", op);
}

void trace_phase(const char* what) {
  if (!tracing()) return;
  if (torch::cuda::is_available()) torch::cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - request_start()).count();
  std::fprintf(stderr, "[kblaster-harness +%.3f s] %s\n", s, what);
  std::fflush(stderr);
}

}  // namespace kblaster::harness
