// The shape a large task is profiled at: KernelBench's sizes (a 6.4 GB element-wise tensor, a
// naive GEMM of a second a call) are halved until a replay pass is short, never below the floors
// that keep the profile representative, and tasks whose tensors do not share a batch are left as
// they are.
#include "engine/evaluate/profile_shape.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;
using namespace kblaster::engine::optimize;

namespace {

input_spec tensor(std::vector<std::int64_t> shape, std::string dtype = "float32") {
  input_spec t;
  t.name = "t";
  t.shape = std::move(shape);
  t.dtype = std::move(dtype);
  return t;
}

task_spec task_of(std::vector<input_spec> inputs, std::vector<input_spec> outputs = {}) {
  task_spec t;
  t.name = "t";
  t.inputs = std::move(inputs);
  t.outputs = std::move(outputs);
  return t;
}

}  // namespace

TEST_CASE("an element-wise task of 6.4 GB tensors is profiled at a sixteenth of its batch") {
  // 19_ReLU: x [4096, 393216] float32 in and out, 12.9 GB that ncu saves and restores each pass.
  const auto t = task_of({tensor({4096, 393216})}, {tensor({4096, 393216})});
  const auto s = reduced_profile_shape(t, 2.9);
  REQUIRE(s.has_value());
  CHECK(s->full_batch == 4096);
  CHECK(s->batch == 256);
  CHECK(s->task.inputs[0].shape == std::vector<std::int64_t>{256, 393216});
  CHECK(s->task.outputs[0].shape == std::vector<std::int64_t>{256, 393216});
  CHECK(t.inputs[0].shape[0] == 4096);  // the task itself is untouched
  CHECK(s->note.find("256 of the task's 4096 (1/16)") != std::string::npos);
  CHECK(s->note.find("verdict and timing are of the full shape") != std::string::npos);
}

TEST_CASE("a slow GEMM is halved for its time, down to the element floor") {
  // 40_Matmul_Scaling_ResidualAdd: x [16384, 4096], y [16384, 4096], 1.09 s a call. 1/64 would
  // bring a call under 25 ms; 2M elements in the largest tensor stop it at 1/32 (34 ms).
  const auto t = task_of({tensor({16384, 4096})}, {tensor({16384, 4096})});
  const auto s = reduced_profile_shape(t, 1088.0);
  REQUIRE(s.has_value());
  CHECK(s->batch == 512);
  // 29_Matmul_Mish_Mish: x [1024, 8192], 1.41 s a call (its 256 MiB of weights are the
  // reference's, not counted): 64 MiB of tensors is under the bytes floor, yet the time cuts it.
  const auto g = reduced_profile_shape(task_of({tensor({1024, 8192})}, {tensor({1024, 8192})}), 1413.0);
  REQUIRE(g.has_value());
  CHECK(g->batch == 256);
  // Without a timing only the bytes decide, and 512 MiB is under the 1 GiB limit.
  CHECK_FALSE(reduced_profile_shape(t, std::nullopt).has_value());
  // A fast call of the same task is left at its shape.
  CHECK_FALSE(reduced_profile_shape(t, 3.0).has_value());
}

TEST_CASE("cut for its bytes alone, a task keeps the bytes floor") {
  profile_shape_limits l;
  l.max_bytes = 64.0 * 1024 * 1024;
  // 512 MiB of tensors: 1/8 would reach the 64 MiB limit; 128 MiB is the floor, so 1/4.
  const auto t = task_of({tensor({16384, 4096})}, {tensor({16384, 4096})});
  const auto s = reduced_profile_shape(t, 3.0, l);
  REQUIRE(s.has_value());
  CHECK(s->batch == 4096);
  // A slow call of the same task goes past the bytes floor, to the element floor.
  const auto slow = reduced_profile_shape(t, 10000.0, l);
  REQUIRE(slow.has_value());
  CHECK(slow->batch == 512);
}

TEST_CASE("undeclared outputs count as large as the inputs") {
  // 12 GiB of inputs and as much again assumed out: 1/32 is the first under 1 GiB.
  const auto s = reduced_profile_shape(task_of({tensor({4096, 786432})}), std::nullopt);
  REQUIRE(s.has_value());
  CHECK(s->batch == 128);
  CHECK(s->task.outputs.empty());
}

TEST_CASE("tasks that are not one batch, or are small, keep their shape") {
  // A matmul's A [M, K] and B [K, N]: their leading dimensions are not the same batch.
  CHECK_FALSE(reduced_profile_shape(task_of({tensor({8192, 4096}), tensor({4096, 8192})}), 5000.0).has_value());
  // An output that does not share the batch (a reduction over it).
  CHECK_FALSE(reduced_profile_shape(task_of({tensor({8192, 65536})}, {tensor({65536})}), 5000.0).has_value());
  // A scalar input.
  CHECK_FALSE(reduced_profile_shape(task_of({tensor({8192, 65536}), tensor({})}), 5000.0).has_value());
  // A saved tensor cannot be cut.
  auto saved = tensor({8192, 65536});
  saved.file = "/data/x.pt";
  CHECK_FALSE(reduced_profile_shape(task_of({saved}), 5000.0).has_value());
  // A batch of one.
  CHECK_FALSE(reduced_profile_shape(task_of({tensor({1, 1 << 30})}), 5000.0).has_value());
  // The examples' sizes: 4M elements is under every floor.
  CHECK_FALSE(reduced_profile_shape(task_of({tensor({1024, 4096})}, {tensor({1024, 4096})}), 0.3).has_value());
  CHECK_FALSE(reduced_profile_shape(task_of({}), 5000.0).has_value());
}

TEST_CASE("every input and output is cut the same way, other dimensions kept, dtypes counted by their bytes") {
  // Two half-precision inputs sharing a batch of 6000 (not a power of two): 6000 / 4 = 1500.
  const auto t = task_of({tensor({6000, 65536}, "float16"), tensor({6000, 65536, 1}, "float16")},
                         {tensor({6000, 65536}, "float16")});
  const auto s = reduced_profile_shape(t, 100.0);
  REQUIRE(s.has_value());
  CHECK(s->batch == 1500);
  CHECK(s->task.inputs[1].shape == std::vector<std::int64_t>{1500, 65536, 1});
  CHECK(s->task.outputs[0].shape == std::vector<std::int64_t>{1500, 65536});
}
