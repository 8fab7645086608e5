// What the lowering prompt carries besides the kernel: the task's brief (what it must compute, on
// which shapes) and, from a real H100 report, the GPU as ncu queried it, the launch and where its
// time sits against the peaks.
#include "engine/agents/lowering_agent.h"
#include "engine/optimize/task_brief.h"
#include "engine/state/profile_summary.h"
#include "kb/knowledge_base.h"
#include "support/files.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

input_spec tensor(const std::string& name, std::vector<std::int64_t> shape) {
  input_spec s;
  s.name = name;
  s.shape = std::move(shape);
  return s;
}

task_spec softmax_task() {
  task_spec t;
  t.name = "row_softmax";
  t.description = "softmax over each row";
  t.reference.kind = reference_kind::torchscript_source;
  t.reference.source = "def forward(x):\n    return torch.softmax(x, dim=1)\n";
  t.inputs = {tensor("x", {1024, 1024})};
  return t;
}

struct scratch {
  fs::path dir = fs::temp_directory_path() / ("kblaster-brief-test-" + std::to_string(::getpid()));
  scratch() { fs::create_directories(dir); }
  ~scratch() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("the brief says what the kernel must compute and on which shapes") {
  const auto brief = optimize::task_brief(softmax_task(), "// the kernel\n");
  CHECK(brief.find("Task: softmax over each row") != std::string::npos);
  CHECK(brief.find("return torch.softmax(x, dim=1)") != std::string::npos);
  CHECK(brief.find("x: float32[1024, 1024]") != std::string::npos);
  CHECK(brief.find("any size its code accepts") != std::string::npos);
}

TEST_CASE("a kernel reference is shown only once the version being rewritten is no longer it") {
  scratch s;
  task_spec t;
  t.reference.kind = reference_kind::kernel;
  t.reference.path = (s.dir / "reference.cu").string();
  const std::string original = "__global__ void row_sum(const float* x, float* out) { /* the original */ }\n";
  kblaster::support::write_file_atomically(t.reference.path, original);
  t.outputs = {tensor("out, parameter 1", {2048})};
  const auto first = optimize::task_brief(t, original);
  CHECK(first.find("the current source below is that original") != std::string::npos);
  CHECK(first.find("/* the original */") == std::string::npos);  // not repeated
  CHECK(first.find("Outputs: out, parameter 1: float32[2048]") != std::string::npos);
  const auto later = optimize::task_brief(t, "__global__ void row_sum(const float* x, float* out) { /* rewritten */ }\n");
  CHECK(later.find("/* the original */") != std::string::npos);
}

TEST_CASE("an imported KernelBench problem's brief carries its Model's source") {
  scratch s;
  kblaster::support::write_file_atomically(s.dir / "1_Square.py", "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b\n");
  kblaster::support::write_file_atomically(s.dir / "task.json",
                                           R"({"kernelbench": {"problem": ")" + (s.dir / "1_Square.py").string() + R"("}})");
  task_spec t;
  t.dir = s.dir.string();
  t.reference.kind = reference_kind::torchscript_module;
  t.reference.path = (s.dir / "model.pt").string();
  const auto brief = optimize::task_brief(t, "");
  CHECK(brief.find("KernelBench's problem") != std::string::npos);
  CHECK(brief.find("return a @ b") != std::string::npos);
}

TEST_CASE("the lowering prompt carries the brief, the GPU ncu queried, the launch and the time against the peaks") {
  const auto view = llm_test::vadd_view();
  const auto summary = summarize_for_prompt(view);
  CHECK(summary.find("GPU: NVIDIA H100 80GB HBM3 (compute capability 9.0), 132 SMs, 50 MiB L2") != std::string::npos);
  CHECK(summary.find("65536 registers per SM") != std::string::npos);
  CHECK(summary.find("Launch: grid (") != std::string::npos);
  CHECK(summary.find("Time: ") != std::string::npos);
  CHECK(summary.find("of 3.35 TB/s") != std::string::npos);

  scratch s;
  auto kb = kblaster::kb::knowledge_base::open(s.dir / "kb.sqlite");
  agents::lowering_input in;
  in.source = llm_test::vadd_source();
  in.entry_point = "launch_vadd";
  in.state = "memory_bandwidth_saturated";
  in.technique = kb.optimizations(in.state).at(0);
  in.profile_summary = summary;
  in.task_brief = optimize::task_brief(softmax_task(), in.source);
  in.arch = "sm_90";
  const auto [system, user] = agents::lowering_prompts(kb, in);
  CHECK(user.find("return torch.softmax(x, dim=1)") < user.find("Apply this technique"));
  CHECK(user.find("132 SMs") != std::string::npos);
}
