// The mechanical tier's transformations on small sources: the exact rewritten text, the launch
// arithmetic, the order of variants, refusals and their reasons, determinism and bad input.
#include "engine/optimize/mechanical/mechanical.h"

#include <doctest/doctest.h>

#include <string>

using namespace kblaster::engine::optimize;

namespace {

const std::string vector_add = R"(#include <cuda_runtime.h>
__global__ void vector_add(const float* a, const float* b, float* c, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

/// Launches it.
extern "C" int kb_forward(const float* a, const float* b, float* c, long long n, cudaStream_t stream) {
  const int block = 256;
  const long long grid = (n + block - 1) / block;
  vector_add<<<static_cast<unsigned>(grid), block, 0, stream>>>(a, b, c, n);
  return 0;
}
)";

const std::string row_kernel = R"(#include <cuda_runtime.h>
__global__ void rows(const float* x, float* y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int c = 0; c < cols; ++c) s += expf(x[r * cols + c]);
  y[r] = s / cols;
}
void run(const float* x, float* y, int rows, int cols) {
  rows<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
)";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

mechanical_result run(const std::string& src, const std::string& technique, mechanical_context c = {}) {
  return mechanical_variants(src, technique, c);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("mechanical: the technique list in probing order") {
  const std::vector<std::string> expected = {"block_size_tuning", "grid_stride_loop", "grid_size_tuning",
                                             "launch_bounds",     "loop_unrolling",   "read_only_cache",
                                             "vectorized_memory_access", "fast_math_intrinsics"};
  CHECK(mechanical_techniques() == expected);
  CHECK(is_mechanical("loop_unrolling"));
  CHECK_FALSE(is_mechanical("kernel_fusion"));
  const auto r = run(vector_add, "kernel_fusion");
  CHECK(r.variants.empty());
  CHECK(r.not_applicable == "'kernel_fusion' is not a mechanical technique");
}

TEST_CASE("mechanical block_size_tuning: the launch rewritten with the grid recomputed") {
  const auto r = run(vector_add, "block_size_tuning");
  REQUIRE(r.variants.size() == 4);
  CHECK(r.variants[0].label == "block 512");
  CHECK(r.variants[1].label == "block 128");
  CHECK(r.variants[2].label == "block 1024");
  CHECK(r.variants[3].label == "block 64");
  CHECK(r.variants[0].technique == "block_size_tuning");
  CHECK(r.variants[0].parameters["block"] == 512);
  CHECK(r.variants[0].source ==
        replace_all(vector_add, "vector_add<<<static_cast<unsigned>(grid), block, 0, stream>>>",
                    "vector_add<<<static_cast<unsigned>((static_cast<unsigned long long>("
                    "static_cast<unsigned>(grid)) * 256 + 511) / 512), 512, 0, stream>>>"));
  CHECK(contains(r.variants[1].source, "* 256 + 127) / 128), 128, 0, stream>>>"));

  mechanical_context two;
  two.max_variants = 2;
  CHECK(run(vector_add, "block_size_tuning", two).variants.size() == 2);
}

TEST_CASE("mechanical block_size_tuning: a captured launch's 1-D dim3 grid and block are tuned") {
  // What a program's captured launch looks like in its launcher: the grid and the block written as
  // dim3s whose y and z are 1 (a one-thread-per-row kernel on 32 blocks of 128 threads).
  const std::string src = R"(__global__ void rows(const float* in, float* out, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) out[r] = in[r];
}
void kb_forward(const float* in, float* out, int n) { rows<<<dim3(32, 1, 1), dim3(128, 1, 1), 0, 0>>>(in, out, n); }
)";
  const auto r = run(src, "block_size_tuning");
  REQUIRE(r.variants.size() == 4);
  CHECK(r.variants[0].label == "block 256");
  CHECK(r.variants[1].label == "block 64");
  CHECK(contains(r.variants[1].source,
                 "rows<<<static_cast<unsigned>((static_cast<unsigned long long>((dim3(32, 1, 1)).x) * 128 + 63) / 64), 64, 0, 0>>>"));
  // Two or three dimensions stay out.
  CHECK(run(replace_all(src, "dim3(32, 1, 1)", "dim3(32, 2, 1)"), "block_size_tuning").not_applicable ==
        "launch of rows: its grid is a dim3 (2-D/3-D launches are not tuned)");
  CHECK(run(replace_all(src, "dim3(128, 1, 1)", "dim3(64, 2, 1)"), "block_size_tuning").variants.empty());
}

TEST_CASE("mechanical block_size_tuning: refusals say why") {
  SUBCASE("a shared array sized by the block") {
    const std::string src = R"(__global__ void k(float* x) {
  __shared__ float s[256];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[255 - threadIdx.x];
}
void run(float* x) { k<<<4, 256>>>(x); }
)";
    const auto r = run(src, "block_size_tuning");
    CHECK(r.variants.empty());
    CHECK(r.not_applicable == "kernel k has a __shared__ array sized by the literal 256 (the block size)");
  }
  SUBCASE("2-D launches") {
    const std::string src = R"(__global__ void k(float* x) { x[threadIdx.y * 16 + threadIdx.x] = 0.f; }
void run(float* x) {
  const dim3 block(16, 16), grid(4, 4);
  k<<<grid, block>>>(x);
}
)";
    const auto r = run(src, "block_size_tuning");
    CHECK(r.variants.empty());
    CHECK(r.not_applicable == "launch of k: its block `block` is a dim3 (2-D/3-D launches are not tuned)");
  }
  SUBCASE("a block size computed at run time") {
    const std::string src = "__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\n"
                            "void run(float* x, int b) { k<<<1, b>>>(x); }\n";
    CHECK(run(src, "block_size_tuning").not_applicable ==
          "launch of k: its block `b` is not an integer literal or a const integer initialised with one");
  }
  SUBCASE("__launch_bounds__ keeps larger blocks out") {
    const std::string src = replace_all(vector_add, "__global__ void vector_add", "__global__ void __launch_bounds__(256) vector_add");
    const auto r = run(src, "block_size_tuning");
    REQUIRE(r.variants.size() == 2);
    CHECK(r.variants[0].label == "block 128");
    CHECK(r.variants[1].label == "block 64");
  }
}

TEST_CASE("mechanical grid_stride_loop: `if (i < n)` becomes a grid-stride loop and the grid is capped") {
  const auto r = run(vector_add, "grid_stride_loop");
  REQUIRE(r.variants.size() == 4);
  // Block 256: 8 blocks per SM fill 2048 threads; then twice, half and four times as many.
  CHECK(r.variants[0].parameters["blocks_per_sm"] == 8);
  CHECK(r.variants[1].parameters["blocks_per_sm"] == 16);
  CHECK(r.variants[2].parameters["blocks_per_sm"] == 4);
  CHECK(r.variants[3].parameters["blocks_per_sm"] == 32);
  const std::string& out = r.variants[0].source;
  CHECK(contains(out, "  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; "
                      "i += static_cast<long long>(gridDim.x) * blockDim.x) c[i] = a[i] + b[i];\n}"));
  CHECK(contains(out, "vector_add<<<static_cast<unsigned>(kblaster_grid_cap(static_cast<unsigned>(grid), 8)), block, 0, stream>>>"));
  // The helper goes above the launcher's doc comment, once.
  CHECK(contains(out, "}\n\n// kblaster mechanical tier: caps a 1-D grid"));
  CHECK(contains(out, "  return grid < cap ? grid : cap;\n}\n\n/// Launches it.\nextern \"C\""));
  CHECK(contains(out, "cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device)"));
  CHECK(out.find("static unsigned long long kblaster_grid_cap") == out.rfind("static unsigned long long kblaster_grid_cap"));
}

TEST_CASE("mechanical grid_stride_loop: `if (i >= n) return;` wraps and indents the rest") {
  const auto r = run(row_kernel, "grid_stride_loop");
  REQUIRE_FALSE(r.variants.empty());
  CHECK(r.variants[0].parameters["blocks_per_sm"] == 16);  // block 128
  CHECK(contains(r.variants[0].source,
                 "__global__ void rows(const float* x, float* y, int rows, int cols) {\n"
                 "  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += static_cast<int>(gridDim.x) * blockDim.x) {\n"
                 "    float s = 0.f;\n"
                 "    for (int c = 0; c < cols; ++c) s += expf(x[r * cols + c]);\n"
                 "    y[r] = s / cols;\n"
                 "  }\n"
                 "}\n"));
  CHECK(contains(r.variants[0].source, "rows<<<static_cast<unsigned>(kblaster_grid_cap((rows + 127) / 128, 16)), 128>>>"));
}

TEST_CASE("mechanical grid_stride_loop: refusals") {
  SUBCASE("barriers in the per-element code") {
    const std::string src = R"(__global__ void k(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  x[i] *= 2.f;
  __syncthreads();
}
void run(float* x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); }
)";
    CHECK(run(src, "grid_stride_loop").not_applicable ==
          "kernel k cannot run its element code in a loop: its per-element code uses `__syncthreads`");
  }
  SUBCASE("2-D indexing") {
    const std::string src = R"(__global__ void k(float* x, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < n) x[row] = 0.f;
}
void run(float* x, int n) { k<<<dim3(1, n), dim3(1, 1)>>>(x, n); }
)";
    CHECK(run(src, "grid_stride_loop").not_applicable ==
          "kernel k indexes in more than one dimension (2-D/3-D kernels are not converted)");
  }
  SUBCASE("an index that is not the global thread index") {
    const std::string src = R"(__global__ void k(float* x, int n) {
  const int i = (blockIdx.x + threadIdx.x) * blockDim.x;
  if (i < n) x[i] = 0.f;
}
void run(float* x, int n) { k<<<1, 32>>>(x, n); }
)";
    CHECK(contains(run(src, "grid_stride_loop").not_applicable, "does not start with `i = blockIdx.x * blockDim.x + threadIdx.x;`"));
  }
  SUBCASE("the index modified in the loop body") {
    const std::string src = R"(__global__ void k(float* x, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) { x[i] = 0.f; i += 1; }
}
void run(float* x, int n) { k<<<1, 32>>>(x, n); }
)";
    CHECK(run(src, "grid_stride_loop").not_applicable ==
          "kernel k cannot run its element code in a loop: its per-element code modifies the index `i`");
  }
}

TEST_CASE("mechanical grid_size_tuning: on a grid-stride kernel, and again on its own output") {
  const std::string vadd = R"(#include <cuda_runtime.h>
__global__ void vadd(const float* a, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i];
}
void run(const float* a, float* c, int n) {
  constexpr int block = 256;
  const int grid = (n + block - 1) / block;
  vadd<<<grid, block>>>(a, c, n);
}
)";
  const auto r = run(vadd, "grid_size_tuning");
  REQUIRE(r.variants.size() == 4);
  CHECK(r.variants[0].label == "grid cap 8 blocks/SM");
  CHECK(contains(r.variants[0].source, "vadd<<<static_cast<unsigned>(kblaster_grid_cap(grid, 8)), block>>>"));
  const auto again = run(r.variants[0].source, "grid_size_tuning");
  REQUIRE(again.variants.size() == 4);
  CHECK(again.variants[0].parameters["blocks_per_sm"] == 16);  // 8 is where it stands
  CHECK(contains(again.variants[0].source, "kblaster_grid_cap(grid, 16)), block>>>"));
  const std::string& twice = again.variants[0].source;
  CHECK(twice.find("static unsigned long long kblaster_grid_cap") == twice.rfind("static unsigned long long kblaster_grid_cap"));

  CHECK(contains(run(vector_add, "grid_size_tuning").not_applicable,
                 "kernel vector_add has no grid-stride loop"));
}

TEST_CASE("mechanical launch_bounds: the known block size, with minBlocks variants") {
  const auto r = run(vector_add, "launch_bounds");
  REQUIRE(r.variants.size() == 4);
  CHECK(contains(r.variants[0].source, "__global__ void __launch_bounds__(256, 4) vector_add(const float* a"));
  CHECK(contains(r.variants[1].source, "__launch_bounds__(256, 2) vector_add"));
  CHECK(contains(r.variants[2].source, "__launch_bounds__(256, 8) vector_add"));
  CHECK(contains(r.variants[3].source, "__launch_bounds__(256) vector_add"));
  SUBCASE("a dim3 of literals counts") {
    const std::string src = R"(__global__ void k(float* x) { x[threadIdx.y * 16 + threadIdx.x] = 0.f; }
void run(float* x) {
  const dim3 block(16, 16), grid(4, 4);
  k<<<grid, block>>>(x);
}
)";
    const auto d = run(src, "launch_bounds");
    REQUIRE_FALSE(d.variants.empty());
    CHECK(contains(d.variants[0].source, "__global__ void __launch_bounds__(256, 4) k(float* x)"));
  }
  SUBCASE("an existing bound is rewritten, and sm_86 allows fewer threads per SM") {
    const std::string src = replace_all(vector_add, "void vector_add", "void __launch_bounds__(256, 2) vector_add");
    mechanical_context c;
    c.arch = "sm_86";
    const auto e = run(src, "launch_bounds", c);
    REQUIRE(e.variants.size() == 2);  // 4 and 1; 2 is what it has, 8 * 256 exceeds 1536
    CHECK(contains(e.variants[0].source, "void __launch_bounds__(256, 4) vector_add"));
    CHECK(contains(e.variants[1].source, "void __launch_bounds__(256) vector_add"));
  }
  SUBCASE("unknown block size") {
    const std::string src = "__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\n"
                            "void run(float* x, int b) { k<<<1, b>>>(x); }\n";
    CHECK(run(src, "launch_bounds").not_applicable == "the block size of k's launch (b) is not known");
  }
}

TEST_CASE("mechanical loop_unrolling: a pragma before each innermost for loop") {
  const std::string src = R"(__global__ void k(float* x, int n) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) x[i * n + j] = 0.f;
  }
  if (n > 4) { for (int i = 0; i < 4; ++i) x[i] = 1.f; }
}
)";
  const auto r = run(src, "loop_unrolling");
  REQUIRE(r.variants.size() == 3);
  CHECK(r.variants[0].label == "unroll 4");
  CHECK(r.variants[1].label == "unroll 8");
  CHECK(r.variants[2].label == "unroll 2");
  CHECK(r.variants[0].source == R"(__global__ void k(float* x, int n) {
  for (int i = 0; i < n; ++i) {
    #pragma unroll 4
    for (int j = 0; j < n; ++j) x[i * n + j] = 0.f;
  }
  if (n > 4) { 
#pragma unroll 4
  for (int i = 0; i < 4; ++i) x[i] = 1.f; }
}
)");
  const auto again = run(r.variants[0].source, "loop_unrolling");
  CHECK(again.variants.empty());
  CHECK(again.not_applicable == "kernel k already has unroll pragmas");
  CHECK(run(vector_add, "loop_unrolling").not_applicable == "kernel vector_add has no for loop");
}

TEST_CASE("mechanical read_only_cache: __restrict__ everywhere, const where only read") {
  const std::string src = R"(__global__ void k(float* a, const float* b, float* c, float* d, int n) {
  const int i = threadIdx.x;
  c[i] = a[i] + b[i];
  d[i] += 1.f;
}
)";
  const auto r = run(src, "read_only_cache");
  REQUIRE(r.variants.size() == 2);
  CHECK(r.variants[0].source ==
        "__global__ void k(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, "
        "float* __restrict__ d, int n) {" + src.substr(src.find('\n')));
  CHECK(r.variants[1].source ==
        "__global__ void k(const float* __restrict__ a, const float* __restrict__ b, float* c, float* d, int n) {" +
            src.substr(src.find('\n')));
  const std::string done = "__global__ void k(const float* __restrict__ a, float* __restrict__ c) { c[0] = a[0]; }\n";
  CHECK(run(done, "read_only_cache").not_applicable ==
        "every pointer parameter of kernel k is already __restrict__ and const where read-only");
}

TEST_CASE("mechanical fast_math_intrinsics: needs tolerance, then rewrites calls and clear float divisions") {
  const auto strict = run(row_kernel, "fast_math_intrinsics");
  CHECK(strict.variants.empty());
  CHECK(strict.not_applicable ==
        "the task's tolerance (rtol default, atol default) leaves no room for fast-math error; it needs rtol or atol >= 1e-3");
  mechanical_context loose;
  loose.rtol = 1e-2;
  const std::string src = R"(__global__ void k(const float* x, float* y, int n, int m) {
  float s = 0.f;
  for (int c = 0; c < n; ++c) s += expf(x[c]) / s;
  y[0] = logf(s) + (x[1] - s) / (s * 2.f) - n / m + x[2] / n;
  y[1] = s * x[3] / s;
}
)";
  const auto r = run(src, "fast_math_intrinsics", loose);
  INFO(r.not_applicable);
  REQUIRE(r.variants.size() == 3);
  CHECK(r.variants[0].source == R"(__global__ void k(const float* x, float* y, int n, int m) {
  float s = 0.f;
  for (int c = 0; c < n; ++c) s += __fdividef(__expf(x[c]), s);
  y[0] = __logf(s) + __fdividef((x[1] - s), (s * 2.f)) - n / m + __fdividef(x[2], n);
  y[1] = s * x[3] / s;
}
)");
  CHECK(r.variants[1].label == "intrinsics only");
  CHECK(contains(r.variants[1].source, "s += __expf(x[c]) / s;"));
  CHECK(r.variants[2].label == "__fdividef only");
  CHECK(contains(r.variants[2].source, "s += __fdividef(expf(x[c]), s);"));
  const std::string none = "__global__ void k(int* x) { x[0] = x[1] / x[2]; }\n";
  CHECK(contains(run(none, "fast_math_intrinsics", loose).not_applicable, "no expf/logf"));
}

TEST_CASE("mechanical: comments and strings never look like code; output is deterministic") {
  const std::string src = "// k<<<1, 1024>>>(x); expf(1.f) for (;;)\n" + vector_add +
                          "/* for (int i = 0; i < 3; ++i) */\nconst char* s = \"expf(x) / 2.f\";\n";
  const auto a = run(src, "block_size_tuning");
  const auto b = run(src, "block_size_tuning");
  REQUIRE(a.variants.size() == b.variants.size());
  for (std::size_t i = 0; i < a.variants.size(); ++i) CHECK(a.variants[i].source == b.variants[i].source);
  CHECK(a.variants[0].label == "block 512");
  CHECK(contains(a.variants[0].source, "// k<<<1, 1024>>>(x); expf(1.f) for (;;)\n"));
  CHECK(run(src, "loop_unrolling").not_applicable == "kernel vector_add has no for loop");
  mechanical_context loose;
  loose.atol = 1e-2;
  CHECK(contains(run(src, "fast_math_intrinsics", loose).not_applicable, "no expf/logf"));
}

TEST_CASE("mechanical: bad input gets a reason, never a crash") {
  for (const std::string& technique : mechanical_techniques()) {
    CAPTURE(technique);
    CHECK(run("", technique).not_applicable == "no __global__ kernel definition in the source");
    CHECK(run("int main() { return 0; }", technique).not_applicable == "no __global__ kernel definition in the source");
    for (const std::string& broken : {std::string("__global__ void k(float* x) { x[0] = 1; k<<<"),
                                      std::string("__global__ void k(float* x) {{{ for ( <<< >>> / expf"),
                                      vector_add.substr(0, vector_add.size() / 2),
                                      vector_add.substr(0, 200)}) {
      mechanical_context c;
      c.rtol = 1e-2;
      const auto r = run(broken, technique, c);
      CHECK((r.variants.empty() != r.not_applicable.empty()));
    }
  }
  mechanical_context none;
  none.max_variants = 0;
  CHECK(run(vector_add, "block_size_tuning", none).not_applicable == "no variants asked for (max_variants is 0)");
}

TEST_CASE("mechanical vectorized_memory_access: float4 and float2 with an alignment check and a scalar tail") {
  const auto r = run(vector_add, "vectorized_memory_access");
  REQUIRE(r.variants.size() == 2);
  CHECK(r.variants[0].label == "float4 loads/stores");
  CHECK(r.variants[1].label == "float2 loads/stores");
  CHECK(r.variants[0].parameters["vector_width"] == 4);
  const std::string& v4 = r.variants[0].source;
  // Every pointer the body uses must be 16-byte aligned, else the whole range stays scalar.
  CHECK(contains(v4, "const bool kb_aligned = ((reinterpret_cast<unsigned long long>(c) | "
                     "reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) & 15ull) == 0;"));
  CHECK(contains(v4, "const long long kb_nv = kb_aligned ? kb_n / 4 : 0;"));
  CHECK(contains(v4, "const float4 kb_t = reinterpret_cast<const float4*>(a)[kb_v];"));
  CHECK(contains(v4, "const float4 kb_t = reinterpret_cast<const float4*>(b)[kb_v];"));
  // c is only written: stored in one float4, never loaded.
  CHECK_FALSE(contains(v4, "reinterpret_cast<const float4*>(c)"));
  CHECK(contains(v4, "reinterpret_cast<float4*>(c)[kb_v] = make_float4(kb_c[0], kb_c[1], kb_c[2], kb_c[3]);"));
  CHECK(contains(v4, "kb_c[kb_l] = kb_a[kb_l] + kb_b[kb_l];"));
  // The tail: element kb_nv * 4 + (t - kb_nv) for threads past the vectors, through the original body.
  CHECK(contains(v4, "const long long kb_j = kb_nv * 4 + (static_cast<long long>(i) - kb_nv);"));
  CHECK(contains(v4, "if (kb_j < kb_n) {"));
  CHECK(contains(v4, "c[kb_j] = a[kb_j] + b[kb_j];"));
  // The launch and the host code are untouched.
  CHECK(contains(v4, "vector_add<<<static_cast<unsigned>(grid), block, 0, stream>>>(a, b, c, n);"));
  CHECK(contains(r.variants[1].source, "& 7ull) == 0;"));
  CHECK(contains(r.variants[1].source, "make_float2(kb_c[0], kb_c[1])"));
  CHECK(run(vector_add, "vectorized_memory_access").variants[0].source == v4);  // deterministic
}

TEST_CASE("mechanical vectorized_memory_access: a grid-stride kernel keeps its loop for the tail") {
  const auto strided = run(vector_add, "grid_stride_loop");
  REQUIRE_FALSE(strided.variants.empty());
  const auto r = run(strided.variants[0].source, "vectorized_memory_access");
  REQUIRE(r.variants.size() == 2);
  const std::string& v4 = r.variants[0].source;
  CHECK(contains(v4, "for (long long kb_v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; "
                     "kb_v < kb_nv; kb_v += static_cast<long long>(gridDim.x) * blockDim.x) {"));
  CHECK(contains(v4, "for (long long i = static_cast<long long>(kb_nv * 4 + (blockIdx.x * "
                     "static_cast<long long>(blockDim.x) + threadIdx.x)); i < kb_n; i += "
                     "static_cast<long long>(gridDim.x) * blockDim.x)"));
}

TEST_CASE("mechanical vectorized_memory_access: read-modify-write and conditional writes load the output") {
  const std::string axpy = R"(__global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)";
  const auto r = run(axpy, "vectorized_memory_access");
  REQUIRE(r.variants.size() == 2);
  CHECK(contains(r.variants[0].source, "reinterpret_cast<const float4*>(y)[kb_v]"));
  CHECK(contains(r.variants[0].source, "reinterpret_cast<float4*>(y)[kb_v] = make_float4("));
  const std::string relu = R"(__global__ void relu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { if (x[i] > 0.f) y[i] = x[i]; }
}
)";
  const auto c = run(relu, "vectorized_memory_access");
  REQUIRE(c.variants.size() == 2);
  // y is written only under a condition: lanes the body skips must keep their values.
  CHECK(contains(c.variants[0].source, "reinterpret_cast<const float4*>(y)[kb_v]"));
}

TEST_CASE("mechanical vectorized_memory_access: refusals say why") {
  auto refused = [](const std::string& src) { return run(src, "vectorized_memory_access").not_applicable; };
  CHECK(contains(refused(row_kernel), "kernel rows has code after (or an else to) its bounds check"));
  CHECK(contains(refused(R"(__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[2 * i];
}
)"),
                 "pointer x is used other than as x[i]"));
  CHECK(contains(refused(R"(__global__ void k(const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)"),
                 "pointer y is not a float*"));
  CHECK(contains(refused(R"(__global__ void k(const float* x, float* y, int n) {
  for (;;) { y[0] = x[0]; }
}
)"),
                 "is not element-wise"));
  CHECK(contains(refused(R"(__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = x[i]; __syncthreads(); }
}
)"),
                 "__syncthreads"));
  CHECK(contains(refused(R"(__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
  else y[0] = 0.f;
}
)"),
                 "after (or an else to) its bounds check"));
}
