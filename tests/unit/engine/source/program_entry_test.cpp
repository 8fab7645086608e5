// A program is recognised by its main, however it is spaced; a kernel library is not one.
#include "engine/source/program_entry.h"

#include <doctest/doctest.h>

using kblaster::engine::defines_main;

TEST_CASE("a file that defines main is a program") {
  CHECK(defines_main("int main() { return 0; }"));
  CHECK(defines_main("int main (int argc, char** argv) {}"));
  CHECK(defines_main("static int\tmain\n(void) {}"));
  CHECK_FALSE(defines_main("__global__ void k(float* x) {}\nint domain(int x);\n"));
  CHECK_FALSE(defines_main("int mainly(int);"));
  CHECK_FALSE(defines_main("extern \"C\" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t s);"));
}
