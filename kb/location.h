// Where the per-user KB lives by default.
#pragma once

#include <filesystem>

namespace kblaster::kb {

/// $XDG_DATA_HOME/kblaster/kb.sqlite, else ~/.local/share/kblaster/kb.sqlite (XDG Base
/// Directory spec: a relative XDG_DATA_HOME is ignored). Throws kb_error when neither
/// XDG_DATA_HOME nor HOME is set.
std::filesystem::path default_kb_path();

}  // namespace kblaster::kb
