// Reading and writing whole files, and this user's private scratch folder.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kblaster::support {

/// A file that could not be read or written; what() names it and says why.
class file_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The whole file as bytes. Throws file_error ("cannot read PATH: reason").
std::string read_file(const std::filesystem::path& path);
/// The whole file, or nullopt when it cannot be read (missing, unreadable).
std::optional<std::string> read_file_if_exists(const std::filesystem::path& path);

/// A name beside `path` for writing it whole before a rename: unique per process and call, so
/// that two threads of one process building the same file (the save's profile and Optimize
/// both building the input kernel) never write into each other's.
std::filesystem::path temporary_sibling(const std::filesystem::path& path);

/// Writes `bytes` to `path` through a temporary name in the same folder and a rename, so that
/// a concurrent reader (another thread, another daemon) sees the old file or the new one, never
/// half of one. Creates the folder. Throws file_error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// Like write_file_atomically, but the file is created with mode 0600 (read and write by this
/// user only) from its first byte: for secrets such as the daemon's connection token, which must
/// never be readable by others, not even between a create and a chmod. Throws file_error.
void write_secret_file(const std::filesystem::path& path, std::string_view bytes);

/// Makes `dir` a folder only this user can enter: creates it (mode 0700, parents as needed) or
/// checks the one there, which must be a real folder (not a link) owned by this user and not
/// writable by others; a group or other bit left on it is cleared. Returns `dir`. Throws
/// file_error naming the folder and what is wrong (another user could otherwise plant or
/// replace what we keep there).
std::filesystem::path private_directory(const std::filesystem::path& dir);

/// $TMPDIR/kblaster-<uid>: this user's folder for scratch files, created with mode 0700.
/// Throws file_error when it exists but is not a directory owned by this user (another user
/// could otherwise plant files that we compile).
std::filesystem::path user_scratch_root();

/// This user's folder for the daemon's sockets and token files: $XDG_RUNTIME_DIR/kblaster,
/// else user_scratch_root()/run; mode 0700, checked as private_directory does.
std::filesystem::path user_runtime_dir();

/// Removes the entries of `dir` (files or whole folders) not modified for `age`; errors are
/// ignored. For content-addressed scratch that is never removed while in use.
void remove_entries_older_than(const std::filesystem::path& dir, std::chrono::hours age);

}  // namespace kblaster::support
