// The seed KB shipped inside the binary (kb/seed/seed_kb.json, embedded at build time).
#pragma once

#include <string_view>

namespace kblaster::kb {

/// The text of kb/seed/seed_kb.json as it was when this binary was built.
std::string_view seed_kb_json() noexcept;

}  // namespace kblaster::kb
