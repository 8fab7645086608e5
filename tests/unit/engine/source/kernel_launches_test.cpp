// A kernel's launch configurations as the source writes them (shown by the static hover).
#include "engine/source/kernel_launches.h"

#include <doctest/doctest.h>

using kblaster::engine::launch_configurations;

TEST_CASE("launch configurations: as written, templated launches too, each once") {
  const std::string src = R"(__global__ void vadd(float* a, int n) {}
template <int B> __global__ void tiled(float* a) {}
void run(float* a, int n, cudaStream_t s) {
  vadd<<<(n + 255) / 256,
         256>>>(a, n);
  vadd <<<(n + 255) / 256, 256>>>(a, n);
  tiled<32><<<dim3(4, 4), dim3(32, 32), 0, s>>>(a);
  my_vadd<<<1, 1>>>(a, n);
  vadd(a, n);
}
)";
  CHECK(launch_configurations(src, "vadd") == std::vector<std::string>{"(n + 255) / 256, 256"});
  CHECK(launch_configurations(src, "tiled") == std::vector<std::string>{"dim3(4, 4), dim3(32, 32), 0, s"});
  CHECK(launch_configurations(src, "my").empty());
  CHECK(launch_configurations(src, "missing").empty());
  CHECK(launch_configurations(src, "").empty());
}
