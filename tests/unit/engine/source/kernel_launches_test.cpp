// A kernel's launch configurations as the source writes them (shown by the static hover).
#include "engine/source/kernel_launches.h"

#include <doctest/doctest.h>

using kblaster::engine::kernels_launched_by;
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

TEST_CASE("the kernels a function launches: its body's launches of the file's kernels, qualified or templated") {
  const std::string src = R"(namespace ops {
__global__ void scale_half(float* x, float s) {}
template <int B> __global__ void tiled(float* a) {}
}
__global__ void twice(float* x) {}
extern "C" int kb_forward(const void* in, int n_in, void* out, int n_out, cudaStream_t stream) {
  ops::scale_half<<<1, 256, 0, stream>>>(nullptr, 0.5f);
  ops::tiled<32><<<1, 32, 0, stream>>>(nullptr);
  return 0;
}
int main() { twice<<<1, 32>>>(nullptr); return 0; }
)";
  CHECK(kernels_launched_by(src, "kb_forward") == std::vector<std::string>{"scale_half", "tiled"});
  CHECK(kernels_launched_by(src, "main") == std::vector<std::string>{"twice"});
  CHECK(kernels_launched_by(src, "missing").empty());
  CHECK(kernels_launched_by("__global__ void k() {}\nint kb_forward();\n", "kb_forward").empty());  // a declaration
}
