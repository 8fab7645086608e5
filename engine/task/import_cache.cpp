// The import cache: entries checked on read, built in staging, renamed into place whole.
#include "engine/task/import_cache.h"

#include "support/files.h"
#include "support/hash.h"
#include "support/stop_wait.h"
#include "support/time.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace kblaster::engine {
namespace fs = std::filesystem;

namespace {

const char* const entry_manifest_name = "import_entry.json";
constexpr int entry_format = 1;

// FNV-1a of a file's bytes, read a megabyte at a time (a module with its weights can be large).
std::string file_hash(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  std::uint64_t h = support::fnv1a_offset;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    h = support::fnv1a(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())), h);
  }
  return support::hex64(h);
}

// The regular files directly in `dir`, by name, but the entry's own manifest.
std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != entry_manifest_name) names.push_back(e.path().filename().string());
  return names;
}

nlohmann::json inputs_json(const import_inputs& inputs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : inputs.named()) j[name] = value;
  return j;
}

// Unique per process and call, so that two threads of one process never share a folder.
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Why `manifest` does not describe `entry` as built for `inputs`, or empty when it does.
std::string mismatch(const nlohmann::json& manifest, const fs::path& entry, const import_inputs& inputs) {
  if (manifest.value("format", 0) != entry_format) return "an unknown format";
  if (manifest.value("key", "") != inputs.key()) return "another key's manifest";
  if (manifest.value("inputs", nlohmann::json()) != inputs_json(inputs)) return "made from other inputs";
  const auto files = manifest.value("files", nlohmann::json::object());
  if (!files.contains(exporter_manifest_name)) return std::string("no ") + exporter_manifest_name + " listed";
  for (const auto& [name, expected] : files.items()) {
    const auto path = entry / name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return name + " is missing";
    if (fs::file_size(path, ec) != expected.value("size", std::uintmax_t{0})) return name + " has another size";
    if (file_hash(path) != expected.value("hash", "")) return name + " has changed";
  }
  return {};
}

}  // namespace

import_cache::import_cache(fs::path root) : root_(std::move(root)) {}

fs::path import_cache::default_root() {
  if (const char* d = std::getenv("KBLASTER_IMPORT_CACHE"); d && *d) return std::string(d) == "none" ? fs::path() : fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kblaster" / "imports";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kblaster" / "imports";
  return fs::temp_directory_path() / "kblaster-imports";
}

std::optional<std::string> import_cache::damage(const fs::path& entry, const import_inputs& inputs) const {
  const auto text = support::read_file_if_exists(entry / entry_manifest_name);
  if (!text) return std::string("no ") + entry_manifest_name;
  try {
    if (auto why = mismatch(nlohmann::json::parse(*text), entry, inputs); !why.empty()) return why;
  } catch (const nlohmann::json::exception&) {
    return std::string(entry_manifest_name) + " is not valid JSON";
  }
  return std::nullopt;
}

std::optional<fs::path> import_cache::find(const import_inputs& inputs, std::string& note) const {
  const auto entry = root_ / inputs.key();
  std::error_code ec;
  if (!fs::is_directory(entry, ec)) return std::nullopt;
  if (const auto why = damage(entry, inputs)) {
    note = "the cached import " + entry.string() + " is damaged (" + *why + ")";
    return std::nullopt;
  }
  return entry;
}

void import_cache::discard_if_damaged(const import_inputs& inputs) const {
  const auto entry = root_ / inputs.key();
  std::error_code ec;
  if (fs::exists(entry, ec) && damage(entry, inputs)) move_aside(entry);
}

void import_cache::move_aside(const fs::path& entry) const {
  // Renamed first (one step, so that no reader meets it half removed), then removed at leisure.
  const auto aside = root_ / ".staging" / ("damaged-" + entry.filename().string() + "-" + unique_suffix());
  std::error_code ec;
  fs::create_directories(aside.parent_path(), ec);
  fs::rename(entry, aside, ec);
  if (!ec) fs::remove_all(aside, ec);
}

std::optional<import_cache::build_lock> import_cache::lock_for_build(const std::string& key,
                                                                     std::chrono::seconds patience,
                                                                     std::stop_token stop) const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  support::unique_fd fd(::open((root_ / (key + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return std::nullopt;
  // Polled rather than blocking, so that a builder stuck past the exporter's own timeout cannot
  // hold every other process forever.
  bool failed = false;
  const auto taken = [&] {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return true;
    failed = errno != EWOULDBLOCK && errno != EINTR;
    return failed;
  };
  if (!support::wait_until(taken, stop, support::wait_clock::now() + patience, std::chrono::milliseconds(100)) || failed)
    return std::nullopt;
  return build_lock(std::move(fd));
}

fs::path import_cache::new_staging_dir() const {
  const auto staging_root = root_ / ".staging";
  fs::create_directories(staging_root);
  // What a build killed midway left behind; a live build is never this old (its exporter times out).
  support::remove_entries_older_than(staging_root, std::chrono::hours(24));
  const auto dir = staging_root / ("build-" + unique_suffix());
  fs::create_directories(dir);
  return dir;
}

fs::path import_cache::publish(const fs::path& staging, const import_inputs& inputs, double export_seconds) const {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& name : files_in(staging)) {
    const auto path = staging / name;
    files[name] = {{"size", fs::file_size(path)}, {"hash", file_hash(path)}};
    // Read-only: a run's task folder links to these files, and a link written through would
    // change the cache for every later run.
    fs::permissions(path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                    fs::perm_options::remove);
  }
  const nlohmann::json manifest{{"format", entry_format},   {"key", inputs.key()},
                                {"inputs", inputs_json(inputs)}, {"files", files},
                                {"export_seconds", export_seconds}, {"created", support::utc_now()}};
  support::write_file_atomically(staging / entry_manifest_name, manifest.dump(1) + "\n");

  const auto entry = root_ / inputs.key();
  for (int attempt = 0;; ++attempt) {
    std::error_code ec;
    fs::rename(staging, entry, ec);
    if (!ec) return entry;
    if (!damage(entry, inputs)) {  // another process finished first: theirs stands, ours goes
      fs::remove_all(staging, ec);
      return entry;
    }
    if (attempt > 0) throw fs::filesystem_error("cannot put the import in place", staging, entry, ec);
    move_aside(entry);
  }
}

void copy_import_files(const fs::path& entry, const fs::path& out_dir) {
  fs::create_directories(out_dir);
  for (const auto& name : files_in(entry)) {
    if (name == exporter_manifest_name) continue;
    const auto to = out_dir / name;
    fs::remove(to);
    std::error_code ec;
    fs::create_hard_link(entry / name, to, ec);
    if (ec) fs::copy_file(entry / name, to);
  }
}

}  // namespace kblaster::engine
