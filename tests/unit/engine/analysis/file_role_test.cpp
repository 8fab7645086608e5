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
