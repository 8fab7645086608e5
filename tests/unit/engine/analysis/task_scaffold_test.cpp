// Create a Task's scaffold: inputs and outputs from the signature and the body (in place when
// a pointer is read and written), scalars from a launch in the file or marked to fill in, and a
// kb_forward stub that calls the kernel by its qualified name.
#include "engine/analysis/task_scaffold.h"
#include "engine/task/task.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

namespace {

const std::string scale_half_source =
    "#include <cuda_fp16.h>\n"
    "namespace ops {\n"
    "__global__ void scale_half(__half* x, float s, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);\n"
    "}\n"
    "}  // namespace ops\n";

const cuda_symbol& kernel_named(const std::vector<cuda_symbol>& symbols, const std::string& name) {
  for (const auto& s : symbols)
    if (s.name == name && s.kind == cuda_symbol_kind::global_kernel) return s;
  throw std::runtime_error("no kernel " + name);
}

}  // namespace

TEST_CASE("use_in_body: writes, reads, compound assignments and atomics") {
  CHECK(use_in_body("{ y[i] = x[i]; }", "y").written);
  CHECK_FALSE(use_in_body("{ y[i] = x[i]; }", "y").read);
  CHECK(use_in_body("{ y[i] = x[i]; }", "x").read);
  CHECK_FALSE(use_in_body("{ y[i] = x[i]; }", "x").written);
  CHECK_FALSE(use_in_body("{ if (y[i] == 0) return; }", "y").written);
  const auto compound = use_in_body("{ acc[i] += 1; }", "acc");
  CHECK((compound.read && compound.written));
  const auto atomic = use_in_body("{ atomicAdd(&sum[0], v); }", "sum");
  CHECK((atomic.read && atomic.written));
  CHECK(use_in_body("{ *out = 1; }", "out").written);
  CHECK_FALSE(use_in_body("{ x_other[i] = 1; }", "x").written);
}

TEST_CASE("launch_arguments: the first launch's arguments as written") {
  CHECK(launch_arguments("void f() { ops::k<<<g, b, 0, s>>>(x, 2.0f, min(a, b)); }", "k") ==
        std::vector<std::string>{"x", "2.0f", "min(a, b)"});
  CHECK(launch_arguments("void f() { k(); }", "k").empty());
  CHECK(launch_arguments("void f() { k<<<1, 1>>>(); }", "k").empty());
}

TEST_CASE("an in-place kernel in a namespace, no launch in the file: x in and out, s to fill in, n the length") {
  const auto symbols = locate_cuda_symbols(scale_half_source);
  const auto s = scaffold_task("/w/ops.cu", scale_half_source, kernel_named(symbols, "scale_half"));
  REQUIRE(s.task["inputs"].size() == 1);
  CHECK(s.task["inputs"][0]["name"] == "x");
  CHECK(s.task["inputs"][0]["dtype"] == "float16");
  REQUIRE(s.task["outputs"].size() == 1);
  CHECK(s.task["outputs"][0]["name"] == "x");
  CHECK(s.task["outputs"][0]["initial_from"] == 0);
  REQUIRE(s.task["scalars"].size() == 2);
  CHECK(s.task["scalars"][0]["name"] == "s");
  CHECK(s.task["scalars"][0]["value"].is_null());
  CHECK(s.task["scalars"][1]["name"] == "n");
  CHECK(s.task["scalars"][1]["value"] == "elements");
  CHECK(s.entry_stub.find("ops::scale_half<<<grid, block, 0, stream>>>") != std::string::npos);
  CHECK(s.entry_stub.find("if (n_in != 1 || n_out != 1) return 1;") != std::string::npos);
  CHECK(s.entry_stub.find("static_cast<__half*>(out[0].data)") != std::string::npos);
  CHECK(s.entry_stub.find("FILL IN: s") != std::string::npos);
}

TEST_CASE("scalars take the values of a launch written in the file; a constant length sizes the tensors") {
  const std::string src = scale_half_source +
                          "constexpr int count = 4096;\n"
                          "void run(__half* x) { ops::scale_half<<<(count + 255) / 256, 256>>>(x, 2.0f, count); }\n";
  const auto symbols = locate_cuda_symbols(src);
  const auto s = scaffold_task("/w/ops.cu", src, kernel_named(symbols, "scale_half"));
  CHECK(s.task["scalars"][0]["value"] == 2.0);
  CHECK(s.task["scalars"][1]["value"] == 4096);
  CHECK(s.task["inputs"][0]["shape"] == nlohmann::json::array({4096}));
  CHECK(s.entry_stub.find("static_cast<float>(2.0f)") != std::string::npos);
  CHECK(s.entry_stub.find("static_cast<int>(4096)") != std::string::npos);
  CHECK(s.entry_stub.find("FILL IN") == std::string::npos);
}

TEST_CASE("a scalar left to fill in is explained by the task's validation, not dropped") {
  const auto symbols = locate_cuda_symbols(scale_half_source);
  const auto s = scaffold_task("/w/ops.cu", scale_half_source, kernel_named(symbols, "scale_half"));
  nlohmann::json spec = s.task;
  spec.erase("kernel");  // no file on disk here
  try {
    (void)task_from_json(spec, "/tmp", "ops.task.json");
    FAIL("a task with a scalar to fill in was accepted");
  } catch (const task_error& e) {
    CHECK(std::string(e.what()).find("ops.task.json.scalars[0]: the value of 's' is to be filled in") != std::string::npos);
  }
}
