// libFuzzer target: the strict reader of model answers (engine/agents/answer_parser.h): code
// fences, JSON in prose, truncation, refusals. A model's answer is the least trusted text the
// engine reads. The first byte picks the finish reason, so that truncated answers are reached.
#include "engine/agents/answer_parser.h"
#include "fuzz_input.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace agents = kblaster::engine::agents;
  if (size == 0) return 0;
  static const char* const reasons[] = {"stop", "length", "refusal", "content_filter"};
  kblaster::engine::llm::chat_response answer;
  answer.finish_reason = reasons[data[0] % 4];
  answer.text = std::string(kblaster::fuzz::as_text(data + 1, size - 1));

  for (const auto& block : agents::fenced_blocks(answer.text)) {
    (void)agents::brace_balance(block.body);
    // global_kernels also names kernels only declared (a cut-off answer): no invariant to check.
    for (const auto& name : agents::global_kernels(block.body)) (void)agents::defines_function(block.body, name);
  }
  (void)agents::looks_like_refusal(answer.text);
  const auto source = agents::extract_cuda_source(answer, "kb_forward");
  if (source.value && !source.problem.message.empty()) std::abort();  // a value or a problem
  const auto object = agents::extract_json_object(answer);
  if (object.value && !object.value->is_object()) std::abort();  // "the one JSON object"
  return 0;
}
