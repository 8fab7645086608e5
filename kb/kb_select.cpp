// Selection and state matching against the stored statistics.
#include "kb/knowledge_base.h"

namespace kblaster::kb {

std::vector<choice> knowledge_base::select(const selection_request& request) {
  if (request.k == 0) return {};
  const auto sid = state_id(request.state);
  std::vector<candidate> cands;
  for (auto& o : optimizations(request.state, request.arch)) cands.push_back(candidate{std::move(o), 0, 0});
  // Exploration and retirement look at the state's record over every architecture.
  auto& s = db_->cached(
      "SELECT t.name, g.attempts, g.successes FROM opt_stats g JOIN techniques t ON t.id = g.technique_id "
      "WHERE g.state_id = ? AND g.arch = 'all'");
  {
    sql::statement_use use(s);
    s.bind(1, sid);
    while (s.step()) {
      const std::string name = s.get_text(0);
      for (auto& c : cands)
        if (c.opt.technique == name) {
          c.attempts_in_state = s.get_int(1);
          c.successes_in_state = s.get_int(2);
        }
    }
  }
  return choose(std::move(cands), request);
}

std::optional<state_match> knowledge_base::match_state(const std::string& primary,
                                                       const std::vector<std::string>& secondary,
                                                       const std::string& arch) {
  return matcher_->best(*db_, primary, secondary, arch);
}

}  // namespace kblaster::kb
