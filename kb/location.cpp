// Default KB location following the XDG Base Directory specification.
#include "kb/location.h"

#include "kb/error.h"

#include <cstdlib>

namespace kblaster::kb {

std::filesystem::path default_kb_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "kblaster" / "kb.sqlite";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".local" / "share" / "kblaster" / "kb.sqlite";
  throw kb_error(error_kind::cannot_open,
                 "no default KB location: neither XDG_DATA_HOME nor HOME is set; pass --kb PATH");
}

}  // namespace kblaster::kb
