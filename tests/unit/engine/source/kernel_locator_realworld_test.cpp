// Kernel locator on real-world-style files (softmax, SGEMM), and symbol_at at definitions,
// launch sites and calls.
#include "tests/unit/engine/source/kernel_locator_test_support.h"

namespace kblaster::engine::locator_test {
namespace {

// Offset of the `index`-th character of the unique `anchor`.
std::size_t at(std::string_view source, std::string_view anchor, std::size_t index = 0) {
  return unique_offset(source, anchor) + index;
}

TEST_CASE("locator: softmax file with helpers, functors, two kernels and a launcher") {
  const std::string src = load_fixture("softmax.cu");
  const auto symbols = locate_cuda_symbols(src);
  const std::string ns = "kblaster_examples::";
  check_symbols(src, symbols, {
      expect(ns + "warp_reduce", device, "warp_reduce(T v", "template <typename T, typename Op>",
             "offset));\n  }\n  return v;\n}",
             "__device__ __forceinline__ T warp_reduce(T v, Op op)")
          .with_template({"typename T", "typename Op"}),
      expect(ns + "max_op::operator()", device, "operator()(float a, float b) const { return fmaxf",
             "__device__ float operator()(float a, float b) const { return fmaxf",
             "return fmaxf(a, b); }", "__device__ float operator()(float a, float b)"),
      expect(ns + "sum_op::operator()", device, "operator()(float a, float b) const { return a",
             "__device__ float operator()(float a, float b) const { return a",
             "const { return a + b; }", "__device__ float operator()(float a, float b)"),
      expect(ns + "block_reduce", device, "block_reduce(float v", "template <typename Op>",
             "  __syncthreads();\n  return v;\n}",
             "__device__ float block_reduce(float v, Op op, float identity)")
          .with_template({"typename Op"}),
      expect(ns + "softmax_warp_kernel", kernel, "softmax_warp_kernel(const",
             "template <int ELEMS>", "vals[i] / sum;\n  }\n}",
             "__global__ void __launch_bounds__(128) softmax_warp_kernel(const float* "
             "__restrict__ in, float* __restrict__ out, int rows, int cols)")
          .with_template({"int ELEMS"})
          .with_bounds("128"),
      expect(ns + "softmax_block_kernel", kernel, "softmax_block_kernel(const",
             "__global__ void __launch_bounds__(1024)", "/ row_sum;\n  }\n}",
             "__global__ void __launch_bounds__(1024) softmax_block_kernel(const float* "
             "__restrict__ in, float* __restrict__ out, int cols)")
          .with_bounds("1024"),
      expect(ns + "launch_softmax", launcher, "launch_softmax(", "cudaError_t launch_softmax",
             "return cudaGetLastError();\n}",
             "cudaError_t launch_softmax(const float* in, float* out, int rows, int cols, "
             "cudaStream_t stream)"),
  });

  SUBCASE("hover at the launch sites resolves the kernels") {
    const cuda_symbol* warp = symbol_at(symbols, src, at(src, "softmax_warp_kernel<4><<<", 3));
    REQUIRE(warp != nullptr);
    CHECK(warp->name == "softmax_warp_kernel");
    CHECK(warp->template_parameters == std::vector<std::string>{"int ELEMS"});
    const cuda_symbol* block = symbol_at(symbols, src, at(src, "softmax_block_kernel<<<"));
    REQUIRE(block != nullptr);
    CHECK(block->name == "softmax_block_kernel");
    const cuda_symbol* reduce = symbol_at(symbols, src, at(src, "warp_reduce(row_max"));
    REQUIRE(reduce != nullptr);
    CHECK(reduce->name == "warp_reduce");
  }
}

TEST_CASE("locator: SGEMM file with three kernels and an extern \"C\" entry point") {
  const std::string src = load_fixture("gemm.cu");
  const auto symbols = locate_cuda_symbols(src);
  check_symbols(src, symbols, {
      expect("ceil_div", device, "ceil_div(int a", "__host__ __device__ inline int ceil_div",
             "return (a + b - 1) / b; }", "__host__ __device__ inline int ceil_div(int a, int b)"),
      expect("sgemm_naive", kernel, "sgemm_naive(int m", "__global__ void sgemm_naive",
             "beta * c[row * n + col];\n  }\n}",
             "__global__ void sgemm_naive(int m, int n, int k, float alpha, const float* a, "
             "const float* b, float beta, float* c)"),
      expect("sgemm_tiled", kernel, "sgemm_tiled(int m", "template <int TILE>",
             "beta * c[row * n + col];\n}",
             "__global__ void sgemm_tiled(int m, int n, int k, float alpha, const float* "
             "__restrict__ a, const float* __restrict__ b, float beta, float* __restrict__ c)")
          .with_template({"int TILE"}),
      expect("sgemm_register_blocked", kernel, "sgemm_register_blocked(int m",
             "template <int BM, int BN, int BK, int TM, int TN>",
             "beta * c[r * n + cc];\n    }\n  }\n}",
             "__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1) "
             "sgemm_register_blocked(int m, int n, int k, float alpha, const float* "
             "__restrict__ a, const float* __restrict__ b, float beta, float* __restrict__ c)")
          .with_template({"int BM", "int BN", "int BK", "int TM", "int TN"})
          .with_bounds("(BM * BN) / (TM * TN), 1"),
      expect("kb_sgemm", launcher, "kb_sgemm(", "extern \"C\" int kb_sgemm",
             "KB_CHECK(cudaGetLastError());\n  return 0;\n}",
             "extern \"C\" int kb_sgemm(int m, int n, int k, const float* a, const float* b, "
             "float* c, cudaStream_t stream)")
          .c_linkage(),
  });

  SUBCASE("a launch whose <<< is on the next line after the template arguments") {
    const cuda_symbol* s = symbol_at(symbols, src, at(src, "sgemm_register_blocked<BM, BN"));
    REQUIRE(s != nullptr);
    CHECK(s->name == "sgemm_register_blocked");
    CHECK(s->launch_bounds == "(BM * BN) / (TM * TN), 1");
  }
}

TEST_CASE("locator: host launchers, and host functions that are not") {
  const std::string src = load_fixture("launchers.cu");
  const auto symbols = locate_cuda_symbols(src);
  check_symbols(src, symbols, {
      expect("axpy", kernel, "axpy(T a", "template <typename T>\n__global__", "y[i] = a * x[i] + y[i];\n}",
             "__global__ void axpy(T a, const T* x, T* y, int n)")
          .with_template({"typename T"}),
      expect("zero", kernel, "zero(float* y, int n) {", "__global__ void zero",
             "y[i] = 0.0f;\n}", "__global__ void zero(float* y, int n)"),
      expect("launch_axpy", launcher, "launch_axpy(float", "void launch_axpy",
             "stream>>>(a, x, y, n);\n}",
             "void launch_axpy(float a, const float* x, float* y, int n, cudaStream_t stream)"),
      expect("launch_zero_2d", launcher, "launch_zero_2d(", "static void launch_zero_2d",
             "(y, rows * cols);\n}", "static void launch_zero_2d(float* y, int rows, int cols)"),
      expect("launch_in_lambda", launcher, "launch_in_lambda(", "void launch_in_lambda",
             "go(nullptr);\n}", "void launch_in_lambda(float* y, int n)"),
      expect("host::launch_templated", launcher, "launch_templated(",
             "template <typename T>\nvoid launch_templated", "128>>>(a, x, y, n);\n}",
             "void launch_templated(T a, const T* x, T* y, int n)")
          .with_template({"typename T"}),
      expect("main", launcher, "main()", "int main()", "return 0;\n}", "int main()"),
  });

  const auto name_at = [&](std::size_t offset) -> std::string {
    const cuda_symbol* s = symbol_at(symbols, src, offset);
    return s == nullptr ? "<none>" : s->qualified_name;
  };
  CHECK(name_at(at(src, "zero(float* y, int n) {", 2)) == "zero");             // definition
  CHECK(name_at(at(src, "axpy<float><<<")) == "axpy");                        // first byte
  CHECK(name_at(at(src, "axpy<float><<<", 4)) == "axpy");                     // just after
  CHECK(name_at(at(src, "zero<<<dim3")) == "zero");
  CHECK(name_at(at(src, "zero<<<(n + 255)", 1)) == "zero");                   // in a lambda
  CHECK(name_at(at(src, "zero <<< 4, 256 >>>", 1)) == "zero");                // spaced out
  CHECK(name_at(at(src, "axpy<T><<<(n + 127)")) == "axpy");
  CHECK(name_at(at(src, "launch_axpy(2.0f", 3)) == "launch_axpy");            // a call
  CHECK(name_at(at(src, "zero<<<1, 1>>>(y, n) in a comment", 1)) == "<none>");
  CHECK(name_at(at(src, "cudaMemset(y")) == "<none>");                       // not ours
  CHECK(name_at(at(src, "go = [&]")) == "<none>");                           // not a call
  CHECK(name_at(at(src, "(256);", 1)) == "<none>");                          // a number
  CHECK(name_at(src.size()) == "<none>");
  CHECK(name_at(src.size() + 10) == "<none>");
}

TEST_CASE("symbol_at: a written namespace picks between symbols of one name") {
  const std::string src =
      "namespace a { __global__ void k(int* p) { *p = 1; } }\n"
      "namespace b { __global__ void k(int* p) { *p = 2; } }\n"
      "void go(int* p) { b::k<<<1, 1>>>(p); a::k<<<1, 1>>>(p); }\n";
  const auto symbols = locate_cuda_symbols(src);
  REQUIRE(symbols.size() == 3);
  const cuda_symbol* b = symbol_at(symbols, src, at(src, "k<<<1, 1>>>(p); a::"));
  const cuda_symbol* a = symbol_at(symbols, src, at(src, "k<<<1, 1>>>(p); }"));
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->qualified_name == "a::k");
  CHECK(b->qualified_name == "b::k");
}

}  // namespace
}  // namespace kblaster::engine::locator_test
