// Errors raised by the knowledge base: one exception type whose kind says what went wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace kblaster::kb {

/// What kind of failure a kb_error reports; callers branch on this, users read the message.
enum class error_kind {
  not_sqlite,      ///< the file exists but is not an SQLite database
  foreign,         ///< an SQLite database written by another application
  corrupt,         ///< our database, but damaged
  too_new,         ///< written by a newer KernelBlaster with a schema we do not know
  read_only,       ///< the file or its directory cannot be written
  cannot_open,     ///< the file cannot be opened or created (missing directory, permissions)
  busy,            ///< another process held the lock longer than the busy timeout
  io,              ///< disk full, I/O error
  not_found,       ///< a named state, technique or update does not exist
  invalid_argument,///< bad input (malformed JSON, unknown policy, ...)
  conflict,        ///< a revert that would clobber later changes
  internal,        ///< anything else SQLite reported
};

/// The one exception type thrown across the kb/ boundary.
class kb_error : public std::runtime_error {
 public:
  kb_error(error_kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  /// The category of the failure.
  error_kind kind() const noexcept { return kind_; }

 private:
  error_kind kind_;
};

}  // namespace kblaster::kb
