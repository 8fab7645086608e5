// Who teaches the KB: every attempt and every logged update records it (column taught_by), so
// that a team sharing a server KB can see whose runs taught what (`kblaster kb stats`).
#pragma once

#include <string>

namespace kblaster::kb {

/// $KBLASTER_KB_USER when set and not empty, else the name of the process's effective user
/// (its uid as text when it has no passwd entry).
std::string current_user();

}  // namespace kblaster::kb
