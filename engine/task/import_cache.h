// The import cache: what the KernelBench exporter wrote for a problem (the TorchScript module, saved
// inputs, its manifest with the eager and torch.compile times), kept under ROOT/<key>/ so that the
// same problem on the same PyTorch, device and exporter is exported once (about a minute on an H200
// for TorchScript and the timings), not once per run.
//
// An entry is built in ROOT/.staging/ and renamed into place whole, so no reader sees half of one;
// it holds import_entry.json, the key's inputs and every file's size and hash, checked on every
// read: an entry that fails the check is moved aside and built again. One process builds a key
// while the others wait on ROOT/<key>.lock (flock, released however the builder ends); should two
// build anyway (the lock unusable, or a wait past its limit), the second to finish discards its
// copy. A run gets the entry's files linked (or copied) into its own task folder, and entries are
// read-only, so a run never changes the cache.
//
// Thread safety: an import_cache holds only its root; every operation may run in several threads
// and processes at once.
#pragma once

#include "engine/task/import_inputs.h"
#include "support/unique_fd.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <string>

namespace kblaster::engine {

/// The exporter's manifest, as kept in an entry beside the files it describes.
inline constexpr const char* exporter_manifest_name = "kernelbench_manifest.json";

class import_cache {
 public:
  explicit import_cache(std::filesystem::path root);

  /// $KBLASTER_IMPORT_CACHE (a folder, or "none": empty, no cache), else $XDG_CACHE_HOME/kblaster/imports,
  /// else ~/.cache/kblaster/imports.
  static std::filesystem::path default_root();

  const std::filesystem::path& root() const { return root_; }

  /// The folder of the entry for `inputs` when it is there and whole; when it is there but damaged
  /// (a file missing, changed or cut short; another key's manifest), nullopt and `note` says why.
  std::optional<std::filesystem::path> find(const import_inputs& inputs, std::string& note) const;

  /// Moves the entry of `inputs` aside when it is damaged. Only under the key's build_lock: a
  /// process that judged it damaged earlier would otherwise move away the whole entry that
  /// another process has just put there and is copying from.
  void discard_if_damaged(const import_inputs& inputs) const;

  /// Holds the right to build one key (flock on ROOT/<key>.lock): other processes wait.
  class build_lock {
   public:
    explicit build_lock(support::unique_fd fd) : fd_(std::move(fd)) {}

   private:
    support::unique_fd fd_;  // closing it releases the lock
  };
  /// Waits up to `patience` for the right to build `key`; nullopt when the wait ran out, `stop` came
  /// or the lock file cannot be made (then the caller builds anyway, and publish() settles who
  /// keeps theirs).
  std::optional<build_lock> lock_for_build(const std::string& key, std::chrono::seconds patience,
                                           std::stop_token stop) const;

  /// A new empty folder to build an entry in, on the entries' file system (so that publish renames).
  std::filesystem::path new_staging_dir() const;

  /// Seals `staging` (its files read-only, import_entry.json written) and renames it to the entry of
  /// `inputs`. When a whole entry is already there (another process finished first), `staging` is
  /// discarded and theirs is returned. `export_seconds` is recorded. Throws std::filesystem::filesystem_error.
  std::filesystem::path publish(const std::filesystem::path& staging, const import_inputs& inputs,
                                double export_seconds) const;

 private:
  std::optional<std::string> damage(const std::filesystem::path& entry, const import_inputs& inputs) const;
  void move_aside(const std::filesystem::path& entry) const;

  std::filesystem::path root_;
};

/// Puts the files of an entry (or a staging folder) into `out_dir`, each hard-linked where the file
/// system allows, else copied; import_entry.json and the exporter's manifest stay behind. A file of
/// the same name in `out_dir` is replaced, not written through (it may be a link to another entry).
void copy_import_files(const std::filesystem::path& entry, const std::filesystem::path& out_dir);

}  // namespace kblaster::engine
