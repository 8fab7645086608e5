// Nsight Compute's pages of a kernel already profiled, kept on disk for the next time the same
// kernel is profiled the same way: Optimize started right after a save (whose profile of a
// program's kernel is the same harness-under-ncu run of the captured launch), a resumed run, the
// same task optimized again. A profile costs 4-6 s of GPU time (ncu's start and its replay
// passes) where the rest of a candidate costs about one; a hit costs none, and the state is
// classified afresh from the pages by the classifier of the day.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// What one ncu run left: its exported pages and where its report went.
struct cached_profile {
  std::string details_csv, raw_csv, source_csv;
  std::string report_path;  // the run's .ncu-rep, where it was kept (it may be gone since)
};

class profile_cache {
 public:
  /// The cache in `dir` (created on the first store).
  explicit profile_cache(std::filesystem::path dir);
  /// $KBLASTER_PROFILE_CACHE (a folder, or "none": profile every time), else
  /// $XDG_CACHE_HOME/kblaster/profiles, else ~/.cache/kblaster/profiles.
  static std::filesystem::path default_dir();

  /// A key from its parts (profile_key.h says which: everything that decides what ncu measures).
  /// Each part is hashed whole, so that no two lists of parts share a key.
  static std::string key_of(const std::vector<std::string>& parts);

  /// The pages stored under `key`; nullopt when there are none or they are damaged (a page
  /// missing or empty: ncu always prints a header).
  std::optional<cached_profile> load(const std::string& key) const;
  /// Stores `p` under `key`, each file written atomically; false (and nothing half-written) when
  /// the disk refuses: a cache that cannot be written only costs the next profile.
  bool store(const std::string& key, const cached_profile& p) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace kblaster::engine::optimize
