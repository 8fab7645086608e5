// Tests of the task format reader: directories, .json files, .cu files with an embedded spec,
// the example tasks, and the errors that bad task files get.
#include "engine/task/task.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("kblaster-task-test-" + std::to_string(::getpid())) / name;
  fs::create_directories(p.parent_path());
  return p;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string error_of(const std::string& path) {
  try {
    load_task(path);
  } catch (const task_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every example task reads, names existing kernels and has a reference") {
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks")) {
    if (!fs::exists(e.path() / "task.json")) continue;
    CAPTURE(e.path().string());
    const auto t = load_task(e.path().string());
    CHECK(t.name == e.path().filename().string());
    CHECK(fs::exists(t.kernel));
    CHECK(fs::exists(t.cpu_kernel));
    CHECK(t.reference.kind == reference_kind::torchscript_source);
    CHECK(t.reference.source.find("def forward") != std::string::npos);
    CHECK_FALSE(t.inputs.empty());
    CHECK(t.seeds == 3);
    ++n;
  }
  CHECK(n >= 6);
}

TEST_CASE("a task round-trips through JSON with absolute paths") {
  const auto t = load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/layer_norm");
  const auto j = to_json(t);
  CHECK(fs::path(j["kernel"].get<std::string>()).is_absolute());
  const auto back = task_from_json(j, "/");
  CHECK(back.kernel == t.kernel);
  CHECK(back.inputs.size() == 3);
  CHECK(back.inputs[1].init == "uniform");
  CHECK(back.inputs[1].low == doctest::Approx(0.5));
  CHECK(back.reference.source == t.reference.source);
}

TEST_CASE("a .cu with an embedded kblaster-task comment is a task") {
  const auto cu = scratch("relu.cu");
  write(cu, "// relu\n/* kblaster-task\n{\"reference\": {\"source\": \"def forward(x):\\n    return torch.relu(x)\\n\"},\n"
            " \"inputs\": [{\"shape\": [1024], \"dtype\": \"float16\"}], \"arch\": \"sm_90\"}\n*/\n"
            "extern \"C\" int kb_forward();\n");
  const auto t = load_task(cu.string());
  CHECK(t.name == "relu");
  CHECK(t.kernel == fs::weakly_canonical(cu).string());
  CHECK(t.arch == "sm_90");
  CHECK(t.inputs[0].dtype == "float16");
  const auto tol = tolerance_for("float16", t);
  CHECK(tol.atol == doctest::Approx(1e-2));
}

TEST_CASE("per-dtype tolerances and overrides") {
  task_spec t;
  CHECK(tolerance_for("float32", t).atol == doctest::Approx(1e-4));
  CHECK(tolerance_for("bfloat16", t).rtol == doctest::Approx(1e-2));
  CHECK(tolerance_for("int32", t).atol == 0);
  t.atol = 0.5;
  CHECK(tolerance_for("float32", t).atol == doctest::Approx(0.5));
  CHECK(tolerance_for("float32", t).rtol == doctest::Approx(1e-4));
}

TEST_CASE("bad task files get messages that name the file and the field") {
  const auto dir = scratch("bad");
  fs::create_directories(dir);
  CHECK(error_of((dir / "nothing").string()).find("no such task") != std::string::npos);
  CHECK(error_of(dir.string()).find("no task.json") != std::string::npos);
  write(dir / "task.json", "{not json");
  CHECK(error_of(dir.string()).find("not valid JSON") != std::string::npos);
  write(dir / "task.json", R"({"inputs": [{"shape": [4]}]})");
  CHECK(error_of(dir.string()).find("'reference' is missing") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "def forward(x): return x"}, "inputs": [{"shape": [4], "dtype": "float8"}]})");
  CHECK(error_of(dir.string()).find("inputs[0]: unknown dtype 'float8'") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "def forward(x): return x"}, "inputs": [{"shape": [-1]}]})");
  CHECK(error_of(dir.string()).find("non-negative") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "x + 1"}, "inputs": [{"shape": [4]}]})");
  CHECK(error_of(dir.string()).find("must define 'forward'") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "def forward(x): return x", "kernel": "k.cu"}, "inputs": [{"shape": [4]}]})");
  CHECK(error_of(dir.string()).find("exactly one of") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "def forward(x): return x"}, "inputs": [{"shape": [4]}], "kernel": "missing.cu"})");
  CHECK(error_of(dir.string()).find("does not exist") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"source": "def forward(x): return x"}, "inputs": [{"shape": [4]}], "seeds": 1})");
  CHECK(error_of(dir.string()).find("'seeds' must be an integer from 3") != std::string::npos);
  write(dir / "k.cu", "int x;\n");
  write(dir / "ref.cu", "int y;\n");
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [4]}]})");
  CHECK(error_of(dir.string()).find("needs 'outputs'") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [4]}], "outputs": [{"shape": [4]}]})");
  CHECK(load_task(dir.string()).reference.kind == reference_kind::kernel);
  // An output updated in place starts from an input shaped like it.
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [4]}], "outputs": [{"shape": [4], "initial_from": 0}]})");
  CHECK(load_task(dir.string()).outputs[0].initial_from == 0);
  CHECK(task_from_json(to_json(load_task(dir.string())), "/").outputs[0].initial_from == 0);
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [4]}], "outputs": [{"shape": [4], "initial_from": 1}]})");
  CHECK(error_of(dir.string()).find("outputs[0].initial_from: there is no input 1") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [5]}], "outputs": [{"shape": [4], "initial_from": 0}]})");
  CHECK(error_of(dir.string()).find("not shaped like this output") != std::string::npos);
  write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": [{"shape": [4], "initial_from": 0}], "outputs": [{"shape": [4]}]})");
  CHECK(error_of(dir.string()).find("inputs[0]: 'initial_from' belongs to outputs") != std::string::npos);
  CHECK(error_of((dir / "k.cu").string()).find("no '/* kblaster-task") != std::string::npos);
  write(dir / "task.json", "[1, 2]");
  CHECK(error_of(dir.string()).find("must be a JSON object") != std::string::npos);
}

TEST_CASE("an output's own tolerance wins over the task's, which wins over the dtype's") {
  task_spec t;
  t.outputs.resize(2);
  t.outputs[0].atol = 3e-3;
  CHECK(tolerance_for("float32", t, 0).atol == doctest::Approx(3e-3));
  CHECK(tolerance_for("float32", t, 0).rtol == doctest::Approx(1e-4));  // its rtol: the dtype's
  CHECK(tolerance_for("float32", t, 1).atol == doctest::Approx(1e-4));
  CHECK(tolerance_for("float32", t, 7).atol == doctest::Approx(1e-4));  // past the specs: none of its own
  t.atol = 0.5;
  t.rtol = 0.25;
  CHECK(tolerance_for("float32", t, 0).atol == doctest::Approx(3e-3));
  CHECK(tolerance_for("float32", t, 0).rtol == doctest::Approx(0.25));
  CHECK(tolerance_for("float32", t, 1).atol == doctest::Approx(0.5));
  t.outputs[1].rtol = 2e-2;
  CHECK(tolerance_for("float16", t, 1).rtol == doctest::Approx(2e-2));
  CHECK(tolerance_for("float16", t, 1).atol == doctest::Approx(0.5));
}

TEST_CASE("an output's own tolerance is read, checked and written back") {
  const auto dir = scratch("per_output");
  fs::create_directories(dir);
  write(dir / "ref.cu", "int y;\n");
  const auto task_with = [&](const std::string& outputs, const std::string& inputs = R"([{"shape": [4]}])") {
    write(dir / "task.json", R"({"reference": {"kernel": "ref.cu"}, "inputs": )" + inputs + R"(, "outputs": )" + outputs + "}");
  };
  task_with(R"([{"name": "sums", "shape": [4], "atol": 1.2e-4}, {"shape": [4], "rtol": 0.5}, {"shape": [4], "dtype": "int32"}])");
  const auto t = load_task(dir.string());
  REQUIRE(t.outputs.size() == 3);
  CHECK(t.outputs[0].atol == doctest::Approx(1.2e-4));
  CHECK_FALSE(t.outputs[0].rtol);
  CHECK(t.outputs[1].rtol == doctest::Approx(0.5));
  CHECK_FALSE(t.outputs[2].atol);

  const auto j = to_json(t);
  CHECK(j["outputs"][0]["atol"].get<double>() == doctest::Approx(1.2e-4));
  CHECK_FALSE(j["outputs"][0].contains("rtol"));
  CHECK_FALSE(j["outputs"][2].contains("atol"));
  const auto back = task_from_json(j, "/");
  REQUIRE(back.outputs.size() == 3);
  CHECK(back.outputs[0].atol == doctest::Approx(1.2e-4));
  CHECK(back.outputs[1].rtol == doctest::Approx(0.5));
  CHECK_FALSE(back.outputs[2].atol);
  CHECK(tolerance_for("float32", back, 0).atol == doctest::Approx(1.2e-4));

  task_with(R"([{"shape": [4], "atol": 0}])");
  CHECK(error_of(dir.string()).find("outputs[0]: 'atol' must be a positive finite number") != std::string::npos);
  task_with(R"([{"shape": [4], "rtol": -1e-3}])");
  CHECK(error_of(dir.string()).find("outputs[0]: 'rtol' must be a positive finite number") != std::string::npos);
  task_with(R"([{"shape": [4]}, {"shape": [4], "atol": "wide"}])");
  CHECK(error_of(dir.string()).find("outputs[1]: 'atol' must be a positive finite number") != std::string::npos);
  task_with(R"([{"shape": [4]}])", R"([{"shape": [4], "atol": 1e-3}])");
  CHECK(error_of(dir.string()).find("inputs[0]: 'atol' and 'rtol' belong to outputs") != std::string::npos);
}
