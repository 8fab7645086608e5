// The user a KB write is attributed to.
#include "kb/attribution.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace kblaster::kb {

std::string current_user() {
  if (const char* forced = std::getenv("KBLASTER_KB_USER"); forced && *forced) return forced;
  const uid_t uid = ::geteuid();
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_name)
    return found->pw_name;
  return std::to_string(uid);
}

}  // namespace kblaster::kb
