// The KB-free state matcher.
#include "engine/state/state_naming.h"

#include <algorithm>
#include <vector>

namespace kblaster::engine {

named_state signature_state_namer::match(const performance_signature& s) const {
  std::vector<std::string> sec = s.secondary_names();
  std::sort(sec.begin(), sec.end());
  named_state m;
  m.state = s.primary;
  m.description = s.primary;
  for (const auto& n : sec) {
    m.state += "+" + n;
  }
  if (!sec.empty()) {
    m.description += " with ";
    for (std::size_t i = 0; i < sec.size(); ++i) m.description += (i ? ", " : "") + sec[i];
  }
  m.confidence = s.static_only ? 0.5 : 1.0;  // a static profile cannot see the primary bottleneck
  return m;
}

std::unique_ptr<state_namer> make_default_state_namer() {
  return std::make_unique<signature_state_namer>();
}

}  // namespace kblaster::engine
