// Opening a KB: a file (recognise it: ours, foreign, corrupt, not SQLite, too new; nothing is
// written before the file is known to be ours) or a PostgreSQL server (a postgresql:// URI);
// then create, migrate and seed it.
#include "kb/knowledge_base.h"

#include "kb/change_log.h"
#include "kb/schema.h"
#include "kb/seed.h"
#include "kb/sql_sqlite.h"

#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>
#include <vector>
#include <sstream>

namespace kblaster::kb {
namespace fs = std::filesystem;
namespace {

std::string hex32(std::int64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << (static_cast<std::uint64_t>(v) & 0xffffffffu);
  return o.str();
}

bool writable(const fs::path& p) { return ::access(p.c_str(), W_OK) == 0; }

// The first 16 bytes of the file, read through SQLite's own VFS. Not through a file descriptor
// of our own: closing any descriptor of a file drops every POSIX lock this process holds on it,
// the SHARED lock of another connection to the same KB included; a process of another bench
// worker closing its last connection would then take the file for unused, checkpoint and delete
// its WAL under this process's feet ("database disk image is malformed", issue 50; SQLite's
// "How To Corrupt An SQLite Database File", 2.2). SQLite's unix VFS keeps such a descriptor open
// until the process's last connection to the file closes. nullopt: fewer than 16 bytes.
std::optional<std::array<char, 16>> header_of(const fs::path& path) {
  sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
  if (!vfs) throw kb_error(error_kind::cannot_open, "cannot read KB " + path.string() + ": SQLite has no VFS");
  std::vector<char> storage(static_cast<std::size_t>(vfs->szOsFile));
  auto* file = reinterpret_cast<sqlite3_file*>(storage.data());
  int out_flags = 0;
  const std::string name = path.string();
  if (vfs->xOpen(vfs, name.c_str(), file, SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READONLY, &out_flags) != SQLITE_OK) {
    if (file->pMethods) file->pMethods->xClose(file);
    throw kb_error(error_kind::cannot_open, "cannot read KB " + path.string() + ": " + std::strerror(errno));
  }
  std::array<char, 16> header{};
  const int rc = file->pMethods->xRead(file, header.data(), static_cast<int>(header.size()), 0);
  file->pMethods->xClose(file);
  if (rc == SQLITE_OK) return header;
  if (rc == SQLITE_IOERR_SHORT_READ) return std::nullopt;
  throw kb_error(error_kind::cannot_open, "cannot read KB " + path.string() + " (SQLite I/O error " + std::to_string(rc) + ")");
}

// Checks what is at `path` before SQLite touches it. Returns true when a file exists.
bool precheck(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw kb_error(error_kind::cannot_open, "cannot access KB " + path.string() + ": " + ec.message());
  if (!fs::exists(st)) return false;
  if (fs::is_directory(st))
    throw kb_error(error_kind::cannot_open, "KB path " + path.string() + " is a directory, not a file");
  if (fs::file_size(path, ec) == 0) return true;  // SQLite treats an empty file as a new database
  const auto header = header_of(path);
  if (!header || std::memcmp(header->data(), "SQLite format 3", 16) != 0)
    throw kb_error(error_kind::not_sqlite,
                   "KB " + path.string() +
                       " is not an SQLite database (no SQLite header); it was left untouched. "
                       "Move it away or pass another --kb PATH");
  return true;
}

void prefix_errors(const std::string& where, const std::function<void()>& f) {
  try {
    f();
  } catch (const sql::connection_lost& e) {
    throw sql::connection_lost("KB " + where + ": " + e.what());
  } catch (const kb_error& e) {
    throw kb_error(e.kind(), "KB " + where + ": " + e.what());
  }
}

void refuse_too_new(int version) {
  if (version > schema::latest_version())
    throw kb_error(error_kind::too_new,
                   "written by a newer KernelBlaster (schema version " + std::to_string(version) +
                       ", this binary knows up to " + std::to_string(schema::latest_version()) +
                       "); it was left untouched. Upgrade kblaster to use it");
}

// Brings the schema to the latest version under the write lock: another process may be
// opening the same KB at the same moment, so the version is read again once the lock is held.
void migrate_to_latest(sql::database& db) {
  sql::write_transaction(db, [&] {
    const int now = schema::current_version(db);
    if (now > schema::latest_version())
      throw kb_error(error_kind::too_new, "was upgraded by a newer KernelBlaster meanwhile");
    schema::migrate(db, schema::latest_version());
  });
}

}  // namespace

knowledge_base::knowledge_base(knowledge_base&&) noexcept = default;
knowledge_base& knowledge_base::operator=(knowledge_base&&) noexcept = default;
knowledge_base::~knowledge_base() = default;

knowledge_base knowledge_base::open(const fs::path& path_in, const open_options& options) {
  if (sql::is_server_uri(path_in.native())) return open_server(path_in.native(), options);
  const fs::path path = path_in.empty() ? path_in : fs::absolute(path_in);
  if (path.empty()) throw kb_error(error_kind::invalid_argument, "empty KB path");
  const bool exists = precheck(path);
  using mode = open_options::access_mode;
  bool read_only = options.access == mode::read_only;
  if (options.access == mode::automatic) read_only = exists && !writable(path);

  if (!exists) {
    if (read_only)
      throw kb_error(error_kind::cannot_open, "KB " + path.string() + " does not exist (opened read-only)");
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      throw kb_error(error_kind::read_only, "cannot create the KB's directory " +
                                                path.parent_path().string() + ": " + ec.message());
    if (!writable(path.parent_path()))
      throw kb_error(error_kind::read_only, "cannot create KB " + path.string() + ": directory " +
                                                path.parent_path().string() + " is not writable");
  } else if (!read_only && !writable(path)) {
    throw kb_error(error_kind::read_only,
                   "KB " + path.string() + " is read-only; it was left untouched (reading commands "
                   "such as `kb stats` and `kb export` still work)");
  }

  knowledge_base kb;
  kb.path_ = path;
  kb.shown_ = path.string();
  kb.read_only_ = read_only;
  kb.matcher_ = std::make_unique<state_matcher>();
  prefix_errors(kb.shown_, [&] {
    const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                      SQLITE_OPEN_NOMUTEX;
    kb.db_ = std::make_unique<sql::database>(path.string(), flags);
    auto& db = *kb.db_;
    sqlite3_busy_timeout(sql::sqlite_handle(db), options.busy_timeout_ms);

    // Recognise the file with reads only.
    std::int64_t app_id = 0, tables = 0;
    try {
      app_id = db.query_int("PRAGMA application_id");
      tables = db.query_int("SELECT count(*) FROM sqlite_master");
    } catch (const kb_error& e) {
      if (e.kind() == error_kind::not_sqlite || e.kind() == error_kind::corrupt)
        throw kb_error(error_kind::corrupt, std::string("the file is corrupt (") + e.what() +
                                                "); it was left untouched. Restore a backup or "
                                                "move it away to start a new KB");
      throw;
    }
    if (app_id != schema::application_id && (app_id != 0 || tables > 0))
      throw kb_error(error_kind::foreign,
                     "this is an SQLite database of another application (application_id " +
                         hex32(app_id) + ", " + std::to_string(tables) +
                         " schema objects), not a KernelBlaster KB; it was left untouched. Pass "
                         "another --kb PATH");
    const int version = app_id == 0 ? 0 : schema::current_version(db);
    refuse_too_new(version);
    if (options.check_integrity) {
      const std::string result = db.query_text("PRAGMA quick_check");
      if (result != "ok")
        throw kb_error(error_kind::corrupt, "the file is corrupt (quick_check: " + result +
                                                "); it was left untouched");
    }
    if (read_only) {
      if (version < schema::latest_version())
        throw kb_error(error_kind::read_only, "needs an upgrade from schema version " +
                                                  std::to_string(version) + " but is read-only");
      return;
    }

    // WAL lets readers run beside one writer; NORMAL sync is durable against a killed process
    // (only power loss can drop the last commits), and keeps commits cheap.
    // Checkpoint every ~16 MB of WAL instead of 4 MB: an attempt dirties several scattered
    // pages, and rarer checkpoints write each hot page back once for many commits (measured:
    // about 1.6x the insert throughput). The WAL is truncated back to 32 MB after a checkpoint.
    db.exec("PRAGMA wal_autocheckpoint = 4000");
    db.exec("PRAGMA journal_size_limit = 33554432");
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    if (version < schema::latest_version()) migrate_to_latest(db);
    if (options.seed) kb.seed_if_empty();
  });
  return kb;
}

// A server KB: the database is ours when it has our schema_version table (an empty one is
// created); its own permissions decide what may be written, so automatic access reads and writes.
knowledge_base knowledge_base::open_server(const std::string& uri, const open_options& options) {
  knowledge_base kb;
  kb.path_ = uri;
  kb.shown_ = sql::redact(uri);
  kb.read_only_ = options.access == open_options::access_mode::read_only;
  kb.matcher_ = std::make_unique<state_matcher>();
  prefix_errors(kb.shown_, [&] {
    kb.db_ = std::make_unique<sql::database>(sql::database::connect_postgres(uri, options.busy_timeout_ms));
    auto& db = *kb.db_;
    const int version = schema::current_version(db);
    refuse_too_new(version);
    if (kb.read_only_) {
      if (version < schema::latest_version())
        throw kb_error(error_kind::read_only, "needs an upgrade from schema version " + std::to_string(version) +
                                                  " but is opened read-only");
      return;
    }
    if (version < schema::latest_version()) migrate_to_latest(db);
    if (options.seed) kb.seed_if_empty();
  });
  return kb;
}

void knowledge_base::seed_if_empty() {
  if (db_->query_int("SELECT count(*) FROM meta WHERE key = 'seeded_at'") > 0) return;
  if (db_->query_int("SELECT count(*) FROM states") > 0) return;
  const auto doc = nlohmann::json::parse(seed_kb_json());
  // import_json runs its own transaction; it re-checks emptiness under the lock through the
  // meta row it writes, so two processes seeding at once load the seed once.
  import_json(doc, update_cause{"seed", "seed KB shipped with kblaster", {}});
}

void knowledge_base::require_writable() const {
  if (read_only_)
    throw kb_error(error_kind::read_only, "KB " + shown_ + " is opened read-only");
}

kb_summary knowledge_base::summary() {
  kb_summary s;
  auto& db = *db_;
  s.path = shown_;
  s.backend = db.kind() == sql::dialect::postgres ? "postgresql" : "sqlite";
  s.schema_version = schema::current_version(db);
  s.states = db.query_int("SELECT count(*) FROM states");
  s.techniques = db.query_int("SELECT count(*) FROM techniques");
  s.optimizations = db.query_int("SELECT count(*) FROM optimizations");
  s.attempts = db.query_int("SELECT count(*) FROM attempts");
  s.correct_attempts = db.query_int("SELECT count(*) FROM attempts WHERE correct = 1");
  s.successful_attempts =
      db.query_int("SELECT count(*) FROM attempts WHERE correct = 1 AND measured_speedup > 1");
  s.lessons = db.query_int("SELECT count(*) FROM lessons");
  s.transitions = db.query_int("SELECT count(*) FROM transitions");
  s.updates = db.query_int("SELECT count(*) FROM updates");
  auto a = db.prepare("SELECT arch, count(*) FROM attempts GROUP BY arch ORDER BY arch");
  while (a.step()) s.attempts_by_arch[a.get_text(0)] = a.get_int(1);
  auto u = db.prepare("SELECT taught_by, count(*) FROM attempts GROUP BY taught_by ORDER BY taught_by");
  while (u.step()) s.attempts_by_user[u.get_text(0)] = u.get_int(1);
  auto w = db.prepare("SELECT taught_by, count(*) FROM updates GROUP BY taught_by ORDER BY taught_by");
  while (w.step()) s.updates_by_user[w.get_text(0)] = w.get_int(1);
  if (db.kind() == sql::dialect::postgres) {
    s.file_bytes = db.query_int("SELECT pg_database_size(current_database())");
  } else {
    std::error_code ec;
    const auto bytes = fs::file_size(path_, ec);
    s.file_bytes = ec ? 0 : static_cast<std::int64_t>(bytes);
  }
  s.read_only = read_only_;
  return s;
}

}  // namespace kblaster::kb
