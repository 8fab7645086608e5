// The shape a slow task is profiled at: a naive GEMM of a second a call is halved until a replay
// pass is short, never below the element floor that keeps its grid; a large but fast task, and a
// task whose tensors do not share a batch, are left as they are.
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

TEST_CASE("a slow GEMM is halved for its time, down to the element floor") {
  // 40_Matmul_Scaling_ResidualAdd: x [16384, 4096], y [16384, 4096], 1.09 s a call. 1/64 would
  // bring a call under 25 ms; 2M elements in the output stop it at 1/32 (34 ms).
  const auto t = task_of({tensor({16384, 4096})}, {tensor({16384, 4096})});
  const auto s = reduced_profile_shape(t, 1088.0);
  REQUIRE(s.has_value());
  CHECK(s->full_batch == 16384);
  CHECK(s->batch == 512);
  CHECK(s->task.inputs[0].shape == std::vector<std::int64_t>{512, 4096});
  CHECK(s->task.outputs[0].shape == std::vector<std::int64_t>{512, 4096});
  CHECK(t.inputs[0].shape[0] == 16384);  // the task itself is untouched
  CHECK(s->note.find("512 of the task's 16384 (1/32)") != std::string::npos);
  CHECK(s->note.find("verdict and timing are of the full shape") != std::string::npos);
  // 29_Matmul_Mish_Mish: x [1024, 8192], 1.41 s a call: 8M outputs allow 1/4.
  const auto g = reduced_profile_shape(task_of({tensor({1024, 8192})}, {tensor({1024, 8192})}), 1413.0);
  REQUIRE(g.has_value());
  CHECK(g->batch == 256);
  // 24_LogSoftmax's naive kernel, 114 ms over [4096, 393216] with undeclared outputs: 1/8 is the
  // first cut under 25 ms.
  const auto l = reduced_profile_shape(task_of({tensor({4096, 393216})}), 114.7);
  REQUIRE(l.has_value());
  CHECK(l->batch == 512);
  CHECK(l->task.outputs.empty());
}

TEST_CASE("a large but fast task, or one not timed, keeps its shape") {
  // 19_ReLU: 6.4 GB in and out, 2.9 ms a call. Cut to 1/16 for its bytes, it profiled as
  // latency_bound_memory_stalls instead of memory_bandwidth_saturated on an H200.
  const auto relu = task_of({tensor({4096, 393216})}, {tensor({4096, 393216})});
  CHECK_FALSE(reduced_profile_shape(relu, 2.9).has_value());
  CHECK_FALSE(reduced_profile_shape(relu, std::nullopt).has_value());
  CHECK_FALSE(reduced_profile_shape(relu, 25.0).has_value());
  CHECK(reduced_profile_shape(relu, 51.0).has_value());
}

TEST_CASE("the element floor is the output's: a reduction's small output keeps its grid") {
  // 47_Sum_reduction-like: x [128, 4096, 4095] summed over dim 1 into [128, 1, 4095] (524K
  // elements): however slow, halving would shrink the grid the output sizes, so it is not cut.
  const auto t = task_of({tensor({128, 4096, 4095})}, {tensor({128, 1, 4095})});
  CHECK_FALSE(reduced_profile_shape(t, 500.0).has_value());
  // With a custom floor the output decides, not the input: 524160 / 4 >= 65536, / 8 is not.
  profile_shape_limits l;
  l.min_elements = 65536;
  const auto s = reduced_profile_shape(t, 500.0, l);
  REQUIRE(s.has_value());
  CHECK(s->batch == 32);
}

TEST_CASE("tasks that are not one batch keep their shape") {
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
  CHECK_FALSE(reduced_profile_shape(task_of({}), 5000.0).has_value());
}

TEST_CASE("every input and output is cut the same way, other dimensions kept") {
  // Two half-precision inputs sharing a batch of 6000 (not a power of two), 100 ms: 6000 / 4.
  const auto t = task_of({tensor({6000, 65536}, "float16"), tensor({6000, 65536, 1}, "float16")},
                         {tensor({6000, 65536}, "float16")});
  const auto s = reduced_profile_shape(t, 100.0);
  REQUIRE(s.has_value());
  CHECK(s->batch == 1500);
  CHECK(s->task.inputs[1].shape == std::vector<std::int64_t>{1500, 65536, 1});
  CHECK(s->task.outputs[0].shape == std::vector<std::int64_t>{1500, 65536});
}
