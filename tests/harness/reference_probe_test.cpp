// harness.reference_probe: the "probe_reference" request through the engine's harness_client and
// the real kblaster-harness on the CPU (Debian's LibTorch), on tiny TorchScript-source tasks: one
// whose output is constant over its randn inputs (a ReLU, then -50, then a clamp to [0, 1]: always
// 0), one whose output ignores one of its two inputs within tolerance, and healthy ones (no flag,
// outputs far below atol included). KBLASTER_HARNESS names the harness.
#include "engine/evaluate/harness_client.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/task.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>

using namespace kblaster::engine;

namespace {

// One harness per test case (not a static one: it must end before the process's registry of
// children does).
harness_options cpu_harness() {
  harness_options o;
  const char* h = std::getenv("KBLASTER_HARNESS");
  o.executable = h ? h : "";
  o.device = "cpu";
  o.watchdog = std::chrono::milliseconds(60'000);  // ctest runs tests side by side on a small machine
  return o;
}

task_spec source_task(const std::string& name, const std::string& source, const nlohmann::json& inputs) {
  return task_from_json({{"name", name}, {"reference", {{"source", source}}}, {"inputs", inputs}}, "/tmp", name);
}

nlohmann::json randn(const std::string& name, std::vector<std::int64_t> shape) {
  return {{"name", name}, {"shape", shape}, {"dtype", "float32"}, {"init", "randn"}};
}

// What the CLI would print, shown in the test's output.
reference_probe probe(harness_client& client, const task_spec& task) {
  auto p = probe_reference(client, task, {}, {});
  std::cout << task.name << ": " << to_json(p).dump() << "\n";
  for (const auto& f : p.findings()) std::cout << "  warning: degenerate task: " << f << "\n";
  return p;
}

}  // namespace

TEST_CASE("a constant output over randn inputs is found, with its value") {
  harness_client client(cpu_harness());
  const auto p = probe(client, source_task("clamped_relu",
                                           "def forward(x):\n    return torch.clamp(torch.relu(x) - 50.0, 0.0, 1.0)\n",
                                           nlohmann::json::array({randn("x", {256, 64})})));
  REQUIRE(p.ran());
  CHECK(p.draws == 3);
  REQUIRE(p.outputs.size() == 1);
  CHECK(p.outputs[0].constant);
  REQUIRE(p.outputs[0].value);
  CHECK(*p.outputs[0].value == 0.0);
  CHECK(p.outputs[0].spread == 0.0);
  CHECK(p.constant_output());
  CHECK(p.degenerate());
  CHECK(p.summary() == "degenerate: output constant over the declared inputs");
  REQUIRE(p.findings().size() == 1);
  CHECK(p.findings()[0].find("is always 0") != std::string::npos);
  // Every output constant: no input is redrawn (nothing more to learn, and no reference call spent).
  REQUIRE(p.inputs.size() == 1);
  CHECK_FALSE(p.inputs[0].checked);
  CHECK(p.inputs[0].why == "every output is constant");
}

TEST_CASE("a linear layer, ReLU, -50 and a clamp: constant through the weights too") {
  harness_client client(cpu_harness());
  // The example as a TorchScript source: x @ w with both drawn, the result shifted far below 0.
  const auto p = probe(
      client, source_task("linear_relu_shift_clamp",
                          "def forward(x, w):\n    return torch.clamp(torch.relu(torch.matmul(x, w)) - 50.0, 0.0, 1.0)\n",
                          nlohmann::json::array({randn("x", {32, 16}), randn("w", {16, 8})})));
  REQUIRE(p.ran());
  CHECK(p.constant_output());
  CHECK(p.summary() == "degenerate: output constant over the declared inputs");
}

TEST_CASE("an output that ignores one of two inputs (within tolerance) names that input") {
  harness_client client(cpu_harness());
  // y is shifted far below the clamp's floor: its draws never reach the output.
  const auto p = probe(client, source_task("ignores_y",
                                           "def forward(x, y):\n    return torch.tanh(x) + torch.clamp(y - 50.0, 0.0, 1.0)\n",
                                           nlohmann::json::array({randn("x", {4096}), randn("y", {4096})})));
  REQUIRE(p.ran());
  REQUIRE(p.outputs.size() == 1);
  CHECK_FALSE(p.outputs[0].constant);
  REQUIRE(p.inputs.size() == 2);
  CHECK(p.inputs[0].checked);
  CHECK_FALSE(p.inputs[0].ignored);
  CHECK(p.inputs[0].change > 0.1);
  CHECK(p.inputs[1].checked);
  CHECK(p.inputs[1].ignored);
  CHECK(p.inputs[1].change == 0.0);
  CHECK_FALSE(p.constant_output());
  CHECK(p.degenerate());
  CHECK(p.summary() == "degenerate: output does not depend on input 1 (y)");
}

TEST_CASE("healthy tasks are not flagged, tiny outputs and fixed inputs included") {
  harness_client client(cpu_harness());
  // a + b: both inputs matter.
  const auto add = probe(client, source_task("add", "def forward(a, b):\n    return a + b\n",
                                             nlohmann::json::array({randn("a", {4096}), randn("b", {4096})})));
  REQUIRE(add.ran());
  CHECK_FALSE(add.degenerate());
  CHECK(add.summary().empty());
  CHECK(add.findings().empty());
  for (const auto& in : add.inputs) CHECK(in.checked);

  // Outputs around 1e-6, far below atol: element by element every draw is "within tolerance" of
  // another, but the verdict's magnitude check tells them apart, and so does the probe.
  const auto tiny = probe(client, source_task("tiny", "def forward(a, b):\n    return (a + b) * 1e-6\n",
                                              nlohmann::json::array({randn("a", {4096}), randn("b", {4096})})));
  REQUIRE(tiny.ran());
  CHECK_FALSE(tiny.degenerate());

  // An input that every draw gives the same (zeros) is not redrawn, and says so.
  auto zeros = randn("bias", {4096});
  zeros["init"] = "zeros";
  const auto fixed = probe(client, source_task("with_zeros", "def forward(a, bias):\n    return torch.relu(a) + bias\n",
                                               nlohmann::json::array({randn("a", {4096}), zeros})));
  REQUIRE(fixed.ran());
  CHECK_FALSE(fixed.degenerate());
  REQUIRE(fixed.inputs.size() == 2);
  CHECK_FALSE(fixed.inputs[1].checked);
  CHECK(fixed.inputs[1].why.find("zeros") != std::string::npos);
}

TEST_CASE("a reference that fails is an error of the probe, not of the harness") {
  harness_client client(cpu_harness());
  const auto p = probe(client, source_task("broken", "def forward(x):\n    return torch.matmul(x, x)\n",
                                           nlohmann::json::array({randn("x", {3, 5})})));
  CHECK_FALSE(p.ran());
  CHECK_FALSE(p.error.empty());
  CHECK_FALSE(p.degenerate());
  // The same harness answers the next probe.
  const auto next = source_task("twice", "def forward(a):\n    return a * 2.0\n", nlohmann::json::array({randn("a", {64})}));
  CHECK(probe(client, next).ran());
}
