// Prompt budget: the lowering prompt for every example kernel stays under 12,000 tokens, and the
// estimate tracks text size the way a BPE tokenizer does.
#include "engine/agents/lowering_agent.h"
#include "engine/llm/token_estimate.h"
#include "engine/state/profile_summary.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;
using namespace kblaster::engine::agents;

TEST_CASE("token estimate: words, numbers, symbols") {
  CHECK(llm::estimate_tokens("") == 0);
  CHECK(llm::estimate_tokens("hello world") == 2);
  CHECK(llm::estimate_tokens("a[i] = b[i];") == 10);
  CHECK(llm::estimate_tokens("1048576") == 3);
  CHECK(llm::estimate_tokens("synchronization") == 4);
}

TEST_CASE("prompt budget: lowering prompts of the examples stay under 12,000 tokens") {
  llm_test::seeded_kb k;
  const auto summary = summarize_for_prompt(llm_test::vadd_view());
  int seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(KBLASTER_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".cu") continue;
    ++seen;
    lowering_input in;
    in.source = llm_test::read_text(entry.path());
    in.entry_point = "kb_forward";
    in.state = "uncoalesced_global_memory";
    in.technique = k.kb.optimizations(in.state).at(0);
    in.profile_summary = summary;
    const auto [system, user] = lowering_prompts(k.kb, in);
    const auto tokens = llm::estimate_tokens(system) + llm::estimate_tokens(user);
    CAPTURE(entry.path().string());
    CHECK(tokens > llm::estimate_tokens(in.source));
    CHECK(tokens < 12000);
  }
  CHECK(seen >= 3);
}
