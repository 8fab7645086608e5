// libFuzzer target: batch results files (engine/llm/batch_results.h). The first byte picks the
// format (OpenAI Batch output/error lines, or Anthropic Message Batches results); the rest is
// the file. Answers come from a provider, a file carried between machines, or a script standing
// in for the model: any text. Every answer read must be one of the requests sent, and a merge
// of a reading into itself must keep that true.
#include "engine/llm/batch_results.h"
#include "fuzz_input.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace llm = kblaster::engine::llm;
  if (size == 0) return 0;
  const std::set<std::string> sent = {"r1", "r2", "kb-0-0-0-lowering", "a"};
  const std::string text(kblaster::fuzz::as_text(data + 1, size - 1));
  auto r = (data[0] & 1) ? llm::read_anthropic_batch_results(text, sent) : llm::read_openai_batch_results(text, sent);
  auto again = r;
  r.merge(std::move(again));
  for (const auto& [id, a] : r.answers) {
    if (!sent.count(id) || id != a.custom_id) std::abort();
    if ((a.outcome == llm::batch_outcome::succeeded) != a.response.has_value()) std::abort();
    (void)llm::to_string(a.outcome);
  }
  for (const auto& id : r.unknown_ids)
    if (sent.count(id)) std::abort();
  return 0;
}
