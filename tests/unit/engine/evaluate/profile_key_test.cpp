// The profile cache's key (engine/evaluate/profile_key.h): the same launch profiled the same way
// has one key wherever its capture sits; anything that changes what ncu would measure (the
// launch's data, its shapes, the GPU, what is asked) gives another.
#include "engine/evaluate/profile_key.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A captured task as the capture writes it: the original kernel as the candidate and the
// reference, one input read from a file.
task_spec captured_task(const fs::path& dir, const std::string& name, const std::string& data) {
  fs::create_directories(dir);
  write(dir / "kernel.cu", "__global__ void transpose(const float* in, float* out) {}\n");
  write(dir / "input0.bin", data);
  task_spec t;
  t.name = name;
  t.dir = dir.string();
  t.description = "launch 0 of " + name;
  t.kernel = (dir / "kernel.cu").string();
  t.reference.kind = reference_kind::kernel;
  t.reference.path = (dir / "kernel.cu").string();
  input_spec in;
  in.name = "in";
  in.dtype = "float32";
  in.shape = {2};
  in.file = (dir / "input0.bin").string();
  t.inputs.push_back(in);
  input_spec out;
  out.dtype = "float32";
  out.shape = {2};
  t.outputs.push_back(out);
  return t;
}

std::string key_for(const task_spec& t, const std::string& device = "NVIDIA H100 80GB HBM3",
                    const std::string& asked = "base|kb_candidate/|s:SpeedOfLight") {
  return profile_key({t.kernel, &t, "sm_90", device, "/bin/sh", asked});
}

}  // namespace

TEST_CASE("profile key: the same launch captured into two folders has one key") {
  const auto root = fs::temp_directory_path() / ("kblaster-profile-key-" + std::to_string(::getpid()));
  fs::remove_all(root);
  // The editor's capture on save and the CLI's capture for Optimize, under other names.
  const auto on_save = captured_task(root / "editor" / "transpose-transpose-1111", "transpose_launch0", std::string(8, '\1'));
  const auto optimize = captured_task(root / "cli" / "transpose-transpose-2222", "captured_transpose", std::string(8, '\1'));
  CHECK(profiled_task_identity(on_save) == profiled_task_identity(optimize));
  CHECK(key_for(on_save) == key_for(optimize));
  // No path is left in what is hashed, so moving a capture keeps its profile.
  CHECK(profiled_task_identity(on_save).find(root.string()) == std::string::npos);

  SUBCASE("other data at the same place is another key") {
    const auto before = key_for(on_save);
    write(root / "editor" / "transpose-transpose-1111" / "input0.bin", std::string(8, '\2'));  // same size
    CHECK(key_for(on_save) != before);
  }
  SUBCASE("another shape, another GPU, another ask: other keys") {
    auto wider = on_save;
    wider.inputs[0].shape = {4};
    CHECK(key_for(wider) != key_for(on_save));
    CHECK(key_for(on_save, "NVIDIA H200") != key_for(on_save));
    CHECK(key_for(on_save, "NVIDIA H100 80GB HBM3", "none|kb_candidate/|s:SpeedOfLight") != key_for(on_save));
  }
  SUBCASE("another kernel source is another key") {
    const auto before = key_for(on_save);
    write(on_save.kernel, "__global__ void transpose(const float* in, float* out) { /* tiled */ }\n");
    CHECK(key_for(on_save) != before);
  }
  SUBCASE("a file that is gone is named, not hashed as empty") {
    auto gone = on_save;
    gone.inputs[0].file = (root / "nowhere.bin").string();
    write(root / "empty.bin", "");
    auto empty = on_save;
    empty.inputs[0].file = (root / "empty.bin").string();
    CHECK(key_for(gone) != key_for(empty));
  }
  fs::remove_all(root);
}
