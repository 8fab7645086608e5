#include "harness/trace.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace kblaster::harness {
namespace {

// When the process was loaded: a request's line says how long the harness took to come up
// (LibTorch, the CUDA context; under ncu, its injection too).
const auto process_loaded = std::chrono::steady_clock::now();

std::chrono::steady_clock::time_point& request_start() {
  static auto start = std::chrono::steady_clock::now();
  return start;
}

}  // namespace

bool tracing() {
  static const bool on = std::getenv("KBLASTER_HARNESS_TRACE") != nullptr;
  return on;
}

void trace_request(const char* op) {
  if (!tracing()) return;
  request_start() = std::chrono::steady_clock::now();
  const double up = std::chrono::duration<double>(request_start() - process_loaded).count();
  std::fprintf(stderr, "[kblaster-harness] request %s (the harness up %.3f s)\n", op, up);
}

void trace_phase(const char* what) {
  if (!tracing()) return;
  if (torch::cuda::is_available()) torch::cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - request_start()).count();
  std::fprintf(stderr, "[kblaster-harness +%.3f s] %s\n", s, what);
  std::fflush(stderr);
}

}  // namespace kblaster::harness
