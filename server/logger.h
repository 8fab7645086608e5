// The daemon's log: stderr and a log file, never stdout (which may carry the protocol).
// Thread-safe. Warnings and errors can also be forwarded to the client as window/logMessage.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kblaster::server {

enum class log_level { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

/// Parses "error" | "warn" | "info" | "debug" | "trace"; nullopt otherwise.
std::optional<log_level> parse_log_level(std::string_view text);

class logger {
 public:
  /// `file` may be empty (stderr only). A file that cannot be opened is reported on stderr.
  explicit logger(log_level level = log_level::info, const std::filesystem::path& file = {},
                  bool to_stderr = true);

  void set_level(log_level level);
  log_level level() const;
  /// Receives warn and error lines for the client; set once the connection is up.
  void set_client_sink(std::function<void(log_level, const std::string&)> sink);

  void log(log_level level, std::string_view message);
  void error(std::string_view m) { log(log_level::error, m); }
  void warn(std::string_view m) { log(log_level::warn, m); }
  void info(std::string_view m) { log(log_level::info, m); }
  void debug(std::string_view m) { log(log_level::debug, m); }

  /// The default log file: $XDG_STATE_HOME/kblaster/kblaster.log or ~/.local/state/...
  static std::filesystem::path default_file();

 private:
  mutable std::mutex mutex_;
  log_level level_;
  std::ofstream file_;
  bool to_stderr_;
  std::function<void(log_level, const std::string&)> client_sink_;
};

}  // namespace kblaster::server
