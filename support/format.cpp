// hex64 and the UTC timestamps.
#include "support/hash.h"
#include "support/time.h"

#include <cstdio>
#include <ctime>

namespace kblaster::support {

std::string hex64(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string utc_timestamp(std::chrono::system_clock::time_point when, timestamp_precision precision) {
  using namespace std::chrono;
  const std::time_t t = system_clock::to_time_t(when);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  if (precision == timestamp_precision::milliseconds) {
    const auto ms = duration_cast<milliseconds>(when.time_since_epoch()).count() % 1000;
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  } else {
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  return buf;
}

std::string utc_now(timestamp_precision precision) { return utc_timestamp(std::chrono::system_clock::now(), precision); }

}  // namespace kblaster::support
