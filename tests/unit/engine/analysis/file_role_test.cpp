// engine::role_of, the one answer to "is this file a task or a program?" that the CLI, the
// editor's Optimize, its code actions and the analysis on save all take.
#include "engine/analysis/file_role.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

struct folder {
  fs::path dir = fs::temp_directory_path() / ("kblaster-file-role-" + std::to_string(::getpid()));
  folder() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~folder() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
  // A task.json in the folder naming `kernel` as its kernel.
  void task_naming(const std::string& kernel) const {
    write("task.json", R"({"name": "scale", "kernel": ")" + kernel +
                           R"(", "reference": {"source": "def forward(x):\n    return x * 2\n"},
                           "inputs": [{"name": "x", "shape": [4], "dtype": "float32", "init": "randn"}]})");
  }
};

const std::string kernel_only = "__global__ void scale(float* x) { x[threadIdx.x] *= 2; }\n";
const std::string with_main = kernel_only + "int main() { return 0; }\n";

}  // namespace

TEST_CASE("a .cu with main and no task is a program; without main it is neither, and says why") {
  folder f;
  const auto prog = f.write("prog.cu", with_main);
  CHECK(role_of(prog.string(), {}).is_program());
  const auto lone = f.write("lone.cu", kernel_only);
  const auto role = role_of(lone.string(), {});
  CHECK(role.kind == file_role_kind::neither);
  CHECK(role.why_neither().find("no task and no main()") != std::string::npos);
  // The user's own build names the program: the kernel's file needs no main.
  program_run run;
  run.command = {"./app"};
  CHECK(role_of(lone.string(), run).is_program());
}

TEST_CASE("a task.json in the folder that names the file makes it a task, even when it defines main") {
  folder f;
  const auto prog = f.write("scale.cu", with_main);
  f.task_naming("scale.cu");
  const auto role = role_of(prog.string(), {});
  REQUIRE(role.is_task());
  CHECK(role.task.task->name == "scale");
  // One that names another file is not this file's task.
  const auto other = f.write("other.cu", with_main);
  CHECK(role_of(other.string(), {}).is_program());
  // The folder itself and the spec file are the task too.
  CHECK(role_of(f.dir.string(), {}).is_task());
  CHECK(role_of((f.dir / "task.json").string(), {}).is_task());
}

TEST_CASE("the editor's buffer is what is read: main added but not saved already makes a program") {
  folder f;
  const auto lone = f.write("lone.cu", kernel_only);
  CHECK(role_of(lone.string(), with_main, {}).is_program());
}

TEST_CASE("a broken task file is neither, with the task's error") {
  folder f;
  const auto prog = f.write("prog.cu", with_main);
  f.write("prog.task.json", "{ not json");
  const auto role = role_of(prog.string(), {});
  CHECK(role.kind == file_role_kind::neither);
  CHECK_FALSE(role.task.error.empty());
  CHECK(role.why_neither().find("its task cannot be read") != std::string::npos);
}

TEST_CASE("a broken task file blocks only the kernels its kb_forward launches") {
  folder f;
  const std::string two_kernels =
      "#include <dlpack/dlpack.h>\n"
      "namespace ops {\n__global__ void scale_half(float* x, float s, int n) { x[threadIdx.x] *= s; }\n}\n"
      "__global__ void twice(float* x) { x[threadIdx.x] *= 2; }\n"
      "extern \"C\" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {\n"
      "  ops::scale_half<<<1, 256, 0, stream>>>(static_cast<float*>(out[0].data), 0.5f, 256);\n  return 0;\n}\n"
      "int main() { twice<<<1, 32>>>(nullptr); return 0; }\n";
  const auto ops = f.write("ops.cu", two_kernels);
  f.write("ops.task.json", R"({"name": "ops", "reference": {"source": "def forward(x):\n    return x\n"}, "inputs": []})");
  const auto role = role_of(ops.string(), {});
  CHECK(role.kind == file_role_kind::neither);
  REQUIRE(role.task.kernels == std::vector<std::string>{"scale_half"});
  // Its own kernel: refused with the file and the field.
  const auto own = role.for_kernel("scale_half");
  CHECK(own.kind == file_role_kind::neither);
  CHECK(own.task.error.find("ops.task.json: 'inputs' must be a non-empty array") != std::string::npos);
  // The program's other kernel is the program's, as if the task file were not there.
  const auto other = role.for_kernel("twice");
  CHECK(other.is_program());
  CHECK(other.task.error.empty());
  // The whole file (no kernel named) keeps the error.
  CHECK_FALSE(role.for_kernel("").task.error.empty());

  // Without main, the other kernel is neither, for want of a task: not for the broken one's error.
  const std::string no_main = two_kernels.substr(0, two_kernels.find("int main"));
  const auto lib = f.write("lib.cu", no_main);
  f.write("lib.task.json", "{ not json");
  const auto lib_other = role_of(lib.string(), {}).for_kernel("twice");
  CHECK(lib_other.kind == file_role_kind::neither);
  CHECK(lib_other.why_neither().find("no task and no main()") != std::string::npos);

  // A task file whose kernels cannot be told (no kb_forward) blocks every kernel of its file.
  const auto bare = f.write("bare.cu", "__global__ void a(float* x) {}\n__global__ void b(float* x) {}\nint main() { return 0; }\n");
  f.write("bare.task.json", "{ not json");
  const auto bare_role = role_of(bare.string(), {});
  CHECK(bare_role.task.kernels.empty());
  CHECK(bare_role.for_kernel("b").kind == file_role_kind::neither);
  CHECK_FALSE(bare_role.for_kernel("b").task.error.empty());
}
