// libFuzzer target: recordings of evaluations (engine/evaluate/recorded_evaluator.h), the GPU
// results that CI and the demo replay. A corrupt line must be an evaluation_error naming it.
#include "engine/evaluate/recorded_evaluator.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace engine = kblaster::engine;
  try {
    engine::optimize::replay_evaluator replay(kblaster::fuzz::as_text(data, size), "fuzz");
    (void)replay.describe();
    engine::optimize::evaluation_request request;
    (void)replay.evaluate("vector_add", "__global__ void k() {}", request);
  } catch (const engine::optimize::evaluation_error&) {
  }
  return 0;
}
