// Nsight Compute's pages of a kernel already profiled, kept on disk for the next time the same
// kernel is profiled the same way: Optimize started right after a save (whose profile of a
// program's kernel is the same harness-under-ncu run of the captured launch), a resumed run, the
// same task optimized again. A profile costs 4-6 s of GPU time (ncu's start and its replay
// passes) where the rest of a candidate costs about one; a hit costs none, and the state is
// classified afresh from the pages by the classifier of the day.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <stop_token>
#include <utility>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// What one ncu run left: its exported pages and where its report went.
struct cached_profile {
  std::string details_csv, raw_csv, source_csv;
  std::string report_path;  // the run's .ncu-rep, where it was kept (it may be gone since)
};

/// One profile of a key at a time in this process: the daemon's profile on save and an Optimize
/// started meanwhile ask for the same kernel on the same data, and the second should read the
/// first's pages rather than run ncu again. claim() waits while another thread holds `key` (its
/// ncu run, export and store), then holds it until the returned guard goes; nullopt when `stop`
/// came first.
class profile_claims {
 public:
  class guard {
   public:
    guard(guard&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), key_(std::move(o.key_)) {}
    guard& operator=(guard&&) = delete;
    ~guard();

   private:
    friend class profile_claims;
    guard(profile_claims* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    profile_claims* owner_;
    std::string key_;
  };
  static profile_claims& process();
  std::optional<guard> claim(const std::string& key, std::stop_token stop);

 private:
  std::mutex mutex_;
  std::condition_variable_any released_;  // any: its wait ends at a stop too
  std::set<std::string> held_;
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
