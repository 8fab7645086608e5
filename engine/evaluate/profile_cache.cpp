#include "engine/evaluate/profile_cache.h"

#include "support/files.h"
#include "support/hash.h"

#include <chrono>
#include <cstdlib>

namespace kblaster::engine::optimize {
namespace fs = std::filesystem;

namespace {
constexpr const char* page_files[] = {"details.csv", "raw.csv", "source.csv", "report_path"};
}  // namespace

profile_claims& profile_claims::process() {
  static profile_claims claims;
  return claims;
}

std::optional<profile_claims::guard> profile_claims::claim(const std::string& key, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  // Woken by a release, or by the stop at once.
  if (!released_.wait(lock, stop, [&] { return !held_.count(key); })) return std::nullopt;
  held_.insert(key);
  return guard(this, key);
}

profile_claims::guard::~guard() {
  if (!owner_) return;
  {
    const std::lock_guard lock(owner_->mutex_);
    owner_->held_.erase(key_);
  }
  owner_->released_.notify_all();
}

profile_cache::profile_cache(fs::path dir) : dir_(std::move(dir)) {}

fs::path profile_cache::default_dir() {
  if (const char* d = std::getenv("KBLASTER_PROFILE_CACHE"); d && *d) return d;  // a folder, or "none"
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kblaster" / "profiles";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kblaster" / "profiles";
  return fs::temp_directory_path() / "kblaster-profiles";
}

std::string profile_cache::key_of(const std::vector<std::string>& parts) {
  std::uint64_t h = support::fnv1a_offset;
  for (const auto& p : parts) {
    h = support::fnv1a(std::to_string(p.size()), h);  // the length first: ("ab", "c") is not ("a", "bc")
    h = support::fnv1a(":", h);
    h = support::fnv1a(p, h);
  }
  return support::hex64(h);
}

std::optional<cached_profile> profile_cache::load(const std::string& key) const {
  const auto entry = dir_ / key;
  std::string text[4];
  for (int i = 0; i < 4; ++i) {
    const auto t = support::read_file_if_exists((entry / page_files[i]).string());
    if (!t) return std::nullopt;
    text[i] = *t;
  }
  // ncu prints a header row on every page it exports, even with no kernel in it.
  if (text[0].empty() || text[1].empty() || text[2].empty()) return std::nullopt;
  return cached_profile{text[0], text[1], text[2], text[3]};
}

bool profile_cache::store(const std::string& key, const cached_profile& p) const {
  const auto entry = dir_ / key;
  std::error_code ec;
  fs::create_directories(entry, ec);
  if (ec) return false;
  const std::string* text[4] = {&p.details_csv, &p.raw_csv, &p.source_csv, &p.report_path};
  try {
    // load() wants all four: a first store cut short is a miss. A store over an entry cut short
    // mixes pages of two runs under one key, that is of the same kernel profiled the same way.
    for (int i = 0; i < 4; ++i) support::write_file_atomically(entry / page_files[i], *text[i]);
  } catch (const std::exception&) {
    fs::remove_all(entry, ec);
    return false;
  }
  return true;
}

}  // namespace kblaster::engine::optimize
