// Timestamps as the KB, reports and recordings write them: ISO 8601, UTC, 'Z'.
#pragma once

#include <chrono>
#include <string>

namespace kblaster::support {

enum class timestamp_precision { seconds, milliseconds };

/// "2026-11-23T21:14:02Z", or "2026-11-23T21:14:02.123Z" with milliseconds.
std::string utc_timestamp(std::chrono::system_clock::time_point when,
                          timestamp_precision precision = timestamp_precision::seconds);
/// utc_timestamp of now.
std::string utc_now(timestamp_precision precision = timestamp_precision::seconds);

}  // namespace kblaster::support
