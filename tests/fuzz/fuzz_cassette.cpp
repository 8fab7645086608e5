// libFuzzer target: cassettes and answer books (engine/llm/cassette.h: parse_cassette, the
// parser behind read_cassette). Recorded answers are model output kept in files that CI and
// the demo replay; entries that read must replay (replay_mode_for, cassette_player).
#include "engine/llm/cassette.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace llm = kblaster::engine::llm;
  std::vector<llm::cassette_entry> entries;
  try {
    entries = llm::parse_cassette(kblaster::fuzz::as_text(data, size), "fuzz");
  } catch (const llm::llm_error&) {
    return 0;
  }
  for (const auto& e : entries) (void)llm::entry_json(e).dump();
  llm::cassette_player player(entries, llm::replay_mode_for(entries));
  llm::chat_request request;
  request.agent_role = "lowering";
  request.messages.push_back({"user", "row_softmax kb_forward"});
  try {
    (void)player.next(request);
  } catch (const llm::llm_error&) {
  }
  return 0;
}
