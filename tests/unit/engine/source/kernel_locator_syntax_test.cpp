// Kernel locator on multi-line signatures, declarations, operators, UTF-8, classes and the
// preprocessor.
#include "tests/unit/engine/source/kernel_locator_test_support.h"

namespace kblaster::engine::locator_test {
namespace {

TEST_CASE("locator: multi-line signatures with comments between the parameters") {
  const std::string src = load_fixture("multiline.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("transpose", kernel, "transpose(\n", "template <\n    typename T",
             "tile[threadIdx.x][threadIdx.y];\n}",
             "__global__ void __launch_bounds__(256, 2) transpose(const T* __restrict__ in, "
             "T* __restrict__ out, int rows, int cols)")
          .with_template({"typename T", "int TILE"})
          .with_bounds("256, 2"),
      expect("dot3", device, "dot3(", "__device__ float\ndot3", "az * bz; }",
             "__device__ float dot3(float ax, float ay, float az, float bx, float by, float bz)"),
  });
}

TEST_CASE("locator: declarations and definitions; variables are not functions") {
  const std::string src = load_fixture("declarations.cuh");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("gemm_naive", kernel, "gemm_naive(", "__global__ void gemm_naive",
             "gemm_naive(const float* a, const float* b, float* c, int m, int n, int k);",
             "__global__ void gemm_naive(const float* a, const float* b, float* c, int m, "
             "int n, int k)")
          .declaration(),
      expect("gemm_tiled", kernel, "gemm_tiled(", "template <int TILE>",
             "gemm_tiled(const float* a, const float* b, float* c, int m, int n, int k);",
             "__global__ void gemm_tiled(const float* a, const float* b, float* c, int m, "
             "int n, int k)")
          .with_template({"int TILE"})
          .declaration(),
      expect("warp_sum", device, "warp_sum(float v);", "__device__ float warp_sum",
             "warp_sum(float v);", "__device__ float warp_sum(float v)")
          .declaration(),
      expect("idx2", device, "idx2(", "__host__ __device__ int idx2", "int ld);",
             "__host__ __device__ int idx2(int r, int c, int ld)")
          .declaration(),
      expect("warp_sum", device, "warp_sum(float v) {", "__device__ inline float warp_sum",
             "return v;\n}", "__device__ inline float warp_sum(float v)"),
  });
}

TEST_CASE("locator: operator overloads, free and member") {
  const std::string src = load_fixture("operators.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("operator+", device, "operator+(float2 a", "__device__ __forceinline__ float2",
             "a.y + b.y);\n}", "__device__ __forceinline__ float2 operator+(float2 a, float2 b)"),
      expect("operator<", device, "operator<(const", "__host__ __device__ inline bool",
             "return a.x < b.x; }",
             "__host__ __device__ inline bool operator<(const int2& a, const int2& b)"),
      expect("operator+=", device, "operator+=(", "__device__ float2& operator+=",
             "return a;\n}", "__device__ float2& operator+=(float2& a, float2 b)"),
      expect("operator>=", device, "operator>=(", "__host__ __device__ bool operator>=",
             "return !(a < b); }", "__host__ __device__ bool operator>=(int2 a, int2 b)"),
      expect("shifter::operator<<", device, "operator<<(", "__device__ int operator<<",
             "return v << s; }", "__device__ int operator<<(int v)"),
      expect("shifter::operator()", device, "operator()(", "__device__ int operator()",
             "return v + s; }", "__device__ int operator()(int v)"),
      expect("shifter::operator[]", device, "operator[](", "__device__ int& operator[]",
             "return i == 0 ? s : s; }", "__device__ int& operator[](int i)"),
      expect("shifter::operator bool", device, "operator bool", "__device__ explicit",
             "return s != 0; }", "__device__ explicit operator bool()"),
      expect("operator\"\"_kb", device, "operator\"\"_kb", "__device__ int operator\"\"_kb",
             "static_cast<int>(v) * 1024; }",
             "__device__ int operator\"\"_kb(unsigned long long v)"),
  });
}

TEST_CASE("locator: UTF-8 in comments, strings and names; ranges are byte offsets") {
  const std::string src = load_fixture("utf8.cu");
  const auto symbols = locate_cuda_symbols(src);
  check_symbols(src, symbols, {
      expect("emoji_kernel", kernel, "emoji_kernel(float* x /*", "__global__ void emoji_kernel",
             "label[0];\n}", "__global__ void emoji_kernel(float* x, int n)"),
      expect("größe", device, "größe(", "__device__ float größe", "return v * v; }",
             "__device__ float größe(float v)"),
      expect("launch_emoji", launcher, "launch_emoji(", "void launch_emoji",
             "/* 🎯 */ }", "void launch_emoji(float* x)"),
  });
  // "größe" is 5 characters but 7 bytes.
  CHECK(symbols[1].name_range.end - symbols[1].name_range.begin == 7);
}

TEST_CASE("locator: member functions, constructors with initializer lists, unions, enums") {
  const std::string src = load_fixture("classes.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("vec4::vec4", device, "vec4() :", "__device__ vec4() :", "w{0} {}",
             "__device__ vec4()"),
      expect("vec4::vec4", device, "vec4(float a", "__host__ __device__ vec4(", "w(d) {}",
             "__host__ __device__ vec4(float a, float b, float c, float d)"),
      expect("vec4::dot", device, "dot(const vec4&", "__device__ float dot",
             "w * o.w; }", "__device__ float dot(const vec4& o)"),
      expect("vec4::length", device, "length() const;", "__device__ float length() const;",
             "__device__ float length() const;", "__device__ float length()")
          .declaration(),
      expect("vec4::~vec4", device, "~vec4()", "__device__ ~vec4", "~vec4() {}",
             "__device__ ~vec4()"),
      expect("vec4::sq", device, "sq(float v)", "__device__ static float sq",
             "sq(float v) { return v * v; }", "__device__ static float sq(float v)"),
      expect("vec4::length", device, "length() const {", "__device__ float vec4::length",
             "sqrtf(dot(*this)); }", "__device__ float vec4::length()"),
      expect("small_array::operator[]", device, "operator[](", "__device__ T& operator[]",
             "return data_[i]; }", "__device__ T& operator[](int i)"),
      expect("small_array::size", device, "size() const", "__device__ constexpr int size",
             "return N; }", "__device__ constexpr int size()"),
      expect("sum", device, "sum(const small_array", "template <typename T, int N>\n__device__",
             "return s;\n}", "__device__ T sum(const small_array<T, N>& a)")
          .with_template({"typename T", "int N"}),
      expect("bits::sign", device, "sign()", "__device__ unsigned sign", "return u >> 31; }",
             "__device__ unsigned sign()"),
  });
}

TEST_CASE("locator: #if 0 groups are skipped, other conditional branches are read") {
  const std::string src = load_fixture("preprocessor.cu");
  check_symbols(src, locate_cuda_symbols(src), {
      expect("enabled_else", kernel, "enabled_else(", "__global__ void enabled_else",
             "{ x[0] = 1; }", "__global__ void enabled_else(float* x)"),
      expect("activation", device, "activation(float v) { return __expf",
             "__device__ float activation(float v) { return __expf", "return __expf(v); }",
             "__device__ float activation(float v)"),
      expect("activation", device, "activation(float v) { return expf",
             "__device__ float activation(float v) { return expf", "return expf(v); }",
             "__device__ float activation(float v)"),
      expect("with_pragmas", kernel, "with_pragmas(", "__global__ void with_pragmas",
             "#endif\n  }\n}", "__global__ void with_pragmas(float* x, int n)"),
      expect("last_one", kernel, "last_one()", "__global__ void last_one", "last_one() {}",
             "__global__ void last_one()"),
  });
}

}  // namespace
}  // namespace kblaster::engine::locator_test
