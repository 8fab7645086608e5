// Kernel locator on comments, literals, templates, macros, attributes, linkage and namespaces.
#include "tests/unit/engine/source/kernel_locator_test_support.h"

namespace kblaster::engine::locator_test {
namespace {

TEST_CASE("locator: code inside comments is not a symbol; comments never break ranges") {
  const std::string src = load_fixture("comments.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("scale", kernel, "scale(float* x, float a", "__global__ void scale(",
             "x[i] *= a;\n}", "__global__ void scale(float* x, float a, int n)"),
      expect("twice", device, "twice(float v)", "__device__ /* inline comment */",
             "return 2.0f * v; // }}}\n}", "__device__ float twice(float v)"),
      expect("after_empty_comment", kernel, "after_empty_comment(",
             "__global__ void after_empty_comment", "{ *p = 0; }",
             "__global__ void after_empty_comment(int* p)"),
      expect("after_tricky_comment", device, "after_tricky_comment(",
             "__device__ int after_tricky_comment", "{ return v + 1; }",
             "__device__ int after_tricky_comment(int v)"),
  });
}

TEST_CASE("locator: string and raw-string literals with braces and __global__") {
  const std::string src = load_fixture("raw_strings.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("after_raw", kernel, "after_raw(float* out)", "__global__ void after_raw(",
             "out[0] = 0.0f;\n}", "__global__ void after_raw(float* out)"),
      expect("describe", device, "describe()", "__host__ __device__ const char* describe",
             "\"concatenated } \\\\\";\n}", "__host__ __device__ const char* describe()"),
      // not_a_launcher has "<<<" only inside a string: not a launcher.
      expect("launch_after_strings", launcher, "launch_after_strings(",
             "void launch_after_strings(", "(void)s;\n}",
             "void launch_after_strings(float* out)"),
  });
}

TEST_CASE("locator: character literals and digit separators") {
  const std::string src = load_fixture("char_literals.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("classify", device, "classify(char c)", "__device__ int classify",
             "return 0;\n}", "__device__ int classify(char c)"),
      expect("count_braces", kernel, "count_braces(const", "__global__ void count_braces",
             "(void)u;\n}", "__global__ void count_braces(const char* text, int n, int* counts)"),
  });
}

TEST_CASE("locator: templates, defaults, nested <> and >>, specialisations") {
  const std::string src = load_fixture("templates.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("fill", kernel, "fill(T* out, T value) {", "template <typename T, int N = 4>",
             "N + i] = value;\n}", "__global__ void fill(T* out, T value)")
          .with_template({"typename T", "int N = 4"}),
      expect("reduce_sum", kernel, "reduce_sum(const T*", "template <typename T,\n",
             "out[0] = partial[0];\n}", "__global__ void reduce_sum(const T* in, Acc* out, int n)")
          .with_template({"typename T",
                          "typename Acc = std::conditional_t<std::is_same_v<T, double>, double, "
                          "float>",
                          "int BLOCK = (1 << 8)", "bool CHECK = (BLOCK > 32)"}),
      expect("apply", device, "apply(T x)", "template <template <typename> class Op",
             "return Op<T>{}(x); }", "__device__ T apply(T x)")
          .with_template({"template <typename> class Op", "typename T"}),
      expect("relu", device, "relu(T x)", "template <typename T, typename = std::enable_if_t",
             "x : T(0); }", "__device__ __forceinline__ T relu(T x)")
          .with_template(
              {"typename T", "typename = std::enable_if_t<std::is_floating_point<T>::value>"}),
      expect("fill", kernel, "fill<float, 4>(float* out", "template <>\n",
             "out[threadIdx.x] = value; }",
             "__global__ void fill<float, 4>(float* out, float value)"),
      expect("run_fill", launcher, "run_fill(", "template <typename T>\nvoid run_fill",
             "shapes{{1, 2}, {3}};\n}", "void run_fill(T* out, T value, cudaStream_t stream)")
          .with_template({"typename T"}),
  });
}

TEST_CASE("locator: macro definitions are skipped, macro attributes stay in the signature") {
  const std::string src = load_fixture("macros.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("bias_add", kernel, "bias_add(float* x", "__global__ void KB_LAUNCH_BOUNDS(256)",
             "x[i] += b[i % 64];\n}",
             "__global__ void KB_LAUNCH_BOUNDS(256) bias_add(float* x, const float* b, int n)"),
      expect("doubled", device, "doubled(float v)", "__device__ float doubled",
             "return TWICE(v); }", "__device__ float doubled(float v)"),
      expect("launch_bias", launcher, "launch_bias(", "void launch_bias",
             "CHECK_CUDA(cudaGetLastError());\n}",
             "void launch_bias(float* x, const float* b, int n)"),
  });
}

TEST_CASE("locator: __launch_bounds__, __restrict__, [[nodiscard]] and specifiers") {
  const std::string src = load_fixture("attributes.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("saxpy", kernel, "saxpy(int n", "__global__ void __launch_bounds__(256, 2) saxpy",
             "y[i] = a * x[i] + y[i];\n}",
             "__global__ void __launch_bounds__(256, 2) saxpy(int n, float a, const float* "
             "__restrict__ x, float* __restrict__ y)")
          .with_bounds("256, 2"),
      expect("wide", kernel, "wide(float* out)", "__global__ __launch_bounds__(1024)",
             "out[threadIdx.x] = 0.0f; }",
             "__global__ __launch_bounds__(1024) void wide(float* out)")
          .with_bounds("1024"),
      expect("fast_exp", device, "fast_exp(float x)", "[[nodiscard]]", "return __expf(x); }",
             "[[nodiscard]] __device__ __forceinline__ float fast_exp(float x)"),
      expect("lane_id", device, "lane_id()", "static __device__ inline int lane_id",
             "return threadIdx.x & 31; }", "static __device__ inline int lane_id()"),
      expect("ceil_div", device, "ceil_div(int a", "__host__ __device__ constexpr",
             "return (a + b - 1) / b; }", "__host__ __device__ constexpr int ceil_div(int a, int b)"),
      expect("slow_path", device, "slow_path(float x)", "__device__ __noinline__",
             "return x * 0.5f; }", "__device__ __noinline__ float slow_path(float x)"),
      expect("clustered", kernel, "clustered(float*", "static __global__ void",
             "out[threadIdx.x] = 1.0f;\n}",
             "static __global__ void __launch_bounds__(128, 4, 1) clustered(float* __restrict__ "
             "out)")
          .with_bounds("128, 4, 1"),
  });
}

TEST_CASE("locator: extern \"C\" in single and block form") {
  const std::string src = load_fixture("extern_c.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("c_kernel", kernel, "c_kernel(float* x)", "extern \"C\" __global__ void c_kernel",
             "x[threadIdx.x] = 1.0f; }", "extern \"C\" __global__ void c_kernel(float* x)")
          .c_linkage(),
      expect("in_block", kernel, "in_block(float* x, int n) {", "__global__ void in_block",
             "x[threadIdx.x] = 2.0f;\n}", "__global__ void in_block(float* x, int n)")
          .c_linkage(),
      expect("block_helper", device, "block_helper(", "__device__ float block_helper",
             "block_helper(float v) { return v; }", "__device__ float block_helper(float v)")
          .c_linkage(),
      expect("kb_forward", launcher, "kb_forward(", "int kb_forward",
             "static_cast<float*>(out[0].data), n);\n  return 0;\n}",
             "int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, "
             "cudaStream_t s)")
          .c_linkage(),
      expect("cpp_linkage", kernel, "cpp_linkage(", "__global__ void cpp_linkage",
             "x[0] = 0.0f; }", "__global__ void cpp_linkage(float* x)"),
      expect("after_block", kernel, "after_block(", "__global__ void after_block",
             "x[0] = 3.0f; }", "__global__ void after_block(float* x)"),
      expect("declared_c", kernel, "declared_c(", "extern \"C\" __global__ void declared_c",
             "declared_c(float* x);", "extern \"C\" __global__ void declared_c(float* x)")
          .c_linkage()
          .declaration(),
  });
}

TEST_CASE("locator: nested, a::b, anonymous and inline namespaces") {
  const std::string src = load_fixture("namespaces.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("ops::top", kernel, "top(float* x) { x[0]", "__global__ void top",
             "top(float* x) { x[0] = 0.0f; }", "__global__ void top(float* x)"),
      expect("ops::detail::helper", device, "helper(float v) {", "__device__ float helper",
             "helper(float v) { return v; }", "__device__ float helper(float v)"),
      expect("ops::detail::out_of_line", device, "out_of_line(float v);",
             "__device__ float out_of_line", "out_of_line(float v);",
             "__device__ float out_of_line(float v)")
          .declaration(),
      expect("ops::fused::bias_relu", kernel, "bias_relu(float* x)", "template <int N>",
             "x[threadIdx.x] : 0.0f; }", "__global__ void bias_relu(float* x)")
          .with_template({"int N"}),
      expect("hidden", kernel, "hidden(", "__global__ void hidden", "{ *p = 0; }",
             "__global__ void hidden(int* p)"),
      expect("v2::versioned", device, "versioned(", "__device__ int versioned",
             "{ return 2; }", "__device__ int versioned()"),
      expect("ops::anon_in_ops", device, "anon_in_ops(", "__device__ float anon_in_ops",
             "anon_in_ops(float v) { return v; }", "__device__ float anon_in_ops(float v)"),
      expect("ops::launch_top", launcher, "launch_top(", "void launch_top",
             "<4><<<1, 32>>>(x);\n}", "void launch_top(float* x)"),
      expect("ops::detail::out_of_line", device, "out_of_line(float v) {",
             "__device__ float ops::detail", "detail::helper(v) + 1.0f; }",
             "__device__ float ops::detail::out_of_line(float v)"),
  });
}

}  // namespace
}  // namespace kblaster::engine::locator_test
