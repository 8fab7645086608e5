// Daemon logging to stderr and a file.
#include "server/logger.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>

namespace kblaster::server {
namespace {

const char* name_of(log_level level) {
  switch (level) {
    case log_level::error: return "E";
    case log_level::warn: return "W";
    case log_level::info: return "I";
    case log_level::debug: return "D";
    case log_level::trace: return "T";
  }
  return "?";
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  char out[40];
  std::snprintf(out, sizeof out, "%s.%03d", buf, static_cast<int>(ms));
  return out;
}

}  // namespace

std::optional<log_level> parse_log_level(std::string_view text) {
  if (text == "error") return log_level::error;
  if (text == "warn" || text == "warning") return log_level::warn;
  if (text == "info") return log_level::info;
  if (text == "debug") return log_level::debug;
  if (text == "trace") return log_level::trace;
  return std::nullopt;
}

logger::logger(log_level level, const std::filesystem::path& file, bool to_stderr)
    : level_(level), to_stderr_(to_stderr) {
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  file_.open(file, std::ios::app);
  if (!file_) std::cerr << "kblaster: cannot open log file " << file << "; logging to stderr only\n";
}

void logger::set_level(log_level level) {
  std::lock_guard lock(mutex_);
  level_ = level;
}

log_level logger::level() const {
  std::lock_guard lock(mutex_);
  return level_;
}

void logger::set_client_sink(std::function<void(log_level, const std::string&)> sink) {
  std::lock_guard lock(mutex_);
  client_sink_ = std::move(sink);
}

void logger::log(log_level level, std::string_view message) {
  std::function<void(log_level, const std::string&)> sink;
  {
    std::lock_guard lock(mutex_);
    // Warnings and errors reach the client whatever the level: they are about the user's work.
    if (level <= log_level::warn) sink = client_sink_;
    if (level <= level_) {
      const std::string line = std::string(name_of(level)) + "[" + timestamp() + "] " + std::string(message) + "\n";
      if (to_stderr_) std::cerr << line << std::flush;
      if (file_) file_ << line << std::flush;
    }
  }
  // Outside the lock: the sink writes to the transport, which may log in turn.
  if (sink) sink(level, std::string(message));
}

std::filesystem::path logger::default_file() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state)
    return std::filesystem::path(state) / "kblaster" / "kblaster.log";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "state" / "kblaster" / "kblaster.log";
  return {};
}

}  // namespace kblaster::server
