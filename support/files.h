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

/// Writes `bytes` to `path` through a temporary name in the same folder and a rename, so that
/// a concurrent reader (another thread, another daemon) sees the old file or the new one, never
/// half of one. Creates the folder. Throws file_error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// $TMPDIR/kblaster-<uid>: this user's folder for scratch files, created with mode 0700.
/// Throws file_error when it exists but is not a directory owned by this user (another user
/// could otherwise plant files that we compile).
std::filesystem::path user_scratch_root();

/// Removes the entries of `dir` (files or whole folders) not modified for `age`; errors are
/// ignored. For content-addressed scratch that is never removed while in use.
void remove_entries_older_than(const std::filesystem::path& dir, std::chrono::hours age);

}  // namespace kblaster::support
