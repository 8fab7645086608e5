// Default KB location following the XDG Base Directory specification.
#include "kb/location.h"

#include "kb/error.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

namespace kblaster::kb {
namespace {

std::filesystem::path config_file() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "kblaster" / "config.json";
  const char* home = std::getenv("HOME");
  return home && *home ? std::filesystem::path(home) / ".config" / "kblaster" / "config.json" : std::filesystem::path();
}

}  // namespace

std::string configured_kb() {
  const auto file = config_file();
  if (file.empty()) return {};
  std::ifstream in(file);
  if (!in) return {};
  // A malformed file is the model configuration's to report (engine/llm reads the same file).
  const auto doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object() || !doc.contains("kb")) return {};
  if (!doc["kb"].is_string())
    throw kb_error(error_kind::invalid_argument, file.string() + ": \"kb\" must be a string (a KB file or a postgresql:// URI)");
  return doc["kb"].get<std::string>();
}

std::filesystem::path default_kb_path() {
  if (auto configured = configured_kb(); !configured.empty()) return configured;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "kblaster" / "kb.sqlite";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".local" / "share" / "kblaster" / "kb.sqlite";
  throw kb_error(error_kind::cannot_open,
                 "no default KB location: neither XDG_DATA_HOME nor HOME is set; pass --kb PATH");
}

}  // namespace kblaster::kb
