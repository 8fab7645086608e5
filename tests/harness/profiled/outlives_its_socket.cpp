// outlives_its_socket: vector_add, correct, but at its process's exit it closes every descriptor
// it has (the socket to the judge among them) and goes on running. A profile replies before ncu
// has written its report once the runner is gone; a closed socket must not pass for that, and the
// runner must not be left running. Host code: the judge's CPU path runs the same profile protocol.
// Written for KernelBlaster's tests.
#include <dlpack/dlpack.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace {
void close_everything_and_stay() {
  for (int fd = 3; fd < 4096; ++fd) ::close(fd);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
  }
}
}  // namespace

extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 2 || n_out != 1) return 1;
  static const bool registered = std::atexit(close_everything_and_stay) == 0;
  (void)registered;
  const long long n = in[0].shape[0];
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  return 0;
}
