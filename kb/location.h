// Where the per-user KB lives by default.
#pragma once

#include <filesystem>
#include <string>

namespace kblaster::kb {

/// The KB the config file names (key "kb" of $XDG_CONFIG_HOME/kblaster/config.json: a file or a
/// team server's postgresql:// URI), else $XDG_DATA_HOME/kblaster/kb.sqlite, else
/// ~/.local/share/kblaster/kb.sqlite (XDG Base Directory spec: a relative XDG_DATA_HOME is
/// ignored). Throws kb_error when neither XDG_DATA_HOME nor HOME is set, or when the config
/// file's "kb" is not a string.
std::filesystem::path default_kb_path();

/// The "kb" of the config file, or empty when there is no file or no such key.
std::string configured_kb();

}  // namespace kblaster::kb
