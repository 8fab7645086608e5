// FNV-1a, 64 bits: the content hash behind every cache key, source hash and cassette
// fingerprint. Not cryptographic: keys name content, they do not defend against a forger.
// Changing it would orphan every recording and cache on disk, which is why it is fixed here
// with a golden test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kblaster::support {

// Not FNV's published offset basis (14695981039346656037): the first version of this code lost
// its last digit, and every cache, recording and cassette on disk is keyed by that variant
// since. It hashes as well; the golden test pins it.
inline constexpr std::uint64_t fnv1a_offset = 1469598103934665603ull;

/// Folds `data` into `h` (start with fnv1a_offset; chain calls to hash several pieces).
constexpr std::uint64_t fnv1a(std::string_view data, std::uint64_t h = fnv1a_offset) {
  for (const char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

/// 16 lowercase hex digits.
std::string hex64(std::uint64_t value);

/// hex64(fnv1a(data)).
inline std::string fnv1a_hex(std::string_view data) { return hex64(fnv1a(data)); }

}  // namespace kblaster::support
