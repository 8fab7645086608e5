// bench_kb: the bench's KBs, files or databases on a server (see the header).
#include "engine/bench/bench_kb.h"

#include "engine/bench/result_store.h"
#include "kb/knowledge_base.h"
#include "kb/server_databases.h"
#include "kb/sql.h"
#include "support/hash.h"

#include <optional>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

namespace {

kb::open_options unseeded(kb::open_options::access_mode access = kb::open_options::access_mode::read_write) {
  kb::open_options opts;
  opts.access = access;
  opts.seed = false;
  return opts;
}

// A private server KB made anew: a leftover of that name (a creation cut short) dropped first;
// a copy of `from` (same server) when given.
void new_database(const fs::path& kb, const fs::path& from = {}) {
  const auto uri = kb.native();
  if (!from.empty() && kb::server::same_server(uri, from.native()) &&
      kb::server::connected_database(uri) == kb::server::connected_database(from.native()))
    throw store_error("the KB " + shown_kb(kb) + " cannot be made a copy of itself");
  kb::server::drop_database(uri);
  kb::server::create_database(uri, from.empty() ? std::string() : from.native());
}

// Where a new KB goes: a fresh database, or a file's folder.
void make_room(const fs::path& kb) {
  if (on_server(kb)) {
    new_database(kb);
    return;
  }
  std::error_code ec;
  fs::create_directories(kb.parent_path(), ec);
}

}  // namespace

bool on_server(const fs::path& kb) { return kb::sql::is_server_uri(kb.native()); }

std::string shown_kb(const fs::path& kb) {
  return on_server(kb) ? kb::sql::redact(kb.native()) : fs::absolute(kb).string();
}

fs::path private_kb(const fs::path& shared, const fs::path& run_dir, const std::string& what, const fs::path& file) {
  if (!on_server(shared)) return file;
  auto dir = fs::absolute(run_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  auto name = dir.filename().string() + "_" + support::fnv1a_hex(dir.string()).substr(0, 6);
  if (!what.empty()) name += "_" + what;
  const auto uri = shared.native();
  return kb::server::with_database(uri, kb::server::database_name(kb::server::connected_database(uri), name));
}

bool kb_exists(const fs::path& kb) {
  if (!on_server(kb)) {
    std::error_code ec;
    return fs::exists(kb, ec);
  }
  // Straight to the database, so that a shared KB needs no maintenance connection; that only
  // tells a database that is not there from a server that does not answer.
  std::optional<kb::sql::database> connection;
  try {
    connection.emplace(kb::sql::database::connect_postgres(kb.native()));
  } catch (const kb::kb_error&) {
    if (!kb::server::database_exists(kb.native())) return false;
    throw;
  }
  auto& db = *connection;
  if (!db.has_table("meta") || !db.has_table("states")) return false;
  return db.query_int("SELECT count(*) FROM meta WHERE key = 'seeded_at'") > 0 ||
         db.query_int("SELECT count(*) FROM states") > 0;
}

std::int64_t attempts_in(const fs::path& kb) {
  if (!kb_exists(kb)) return 0;
  auto k = kb::knowledge_base::open(kb, unseeded(kb::open_options::access_mode::read_only));
  return k.db().query_int("SELECT count(*) FROM attempts");
}

void copy_kb(const fs::path& from, const fs::path& to) {
  const auto failed = [&](const std::string& why) {
    return store_error("cannot copy the KB " + shown_kb(from) + " to " + shown_kb(to) + ": " + why);
  };
  std::error_code ec;
  if (!on_server(to) && fs::exists(to, ec)) throw failed("it exists");
  try {
    if (on_server(to) && on_server(from) && kb::server::same_server(from.native(), to.native())) {
      new_database(to, from);  // the whole database, as it is
    } else if (!on_server(to) && !on_server(from)) {
      fs::create_directories(to.parent_path(), ec);
      auto kb = kb::knowledge_base::open(from, unseeded(kb::open_options::access_mode::read_only));
      std::string quoted;
      for (char c : to.string()) quoted += c == '\'' ? std::string("''") : std::string(1, c);
      kb.db().exec("VACUUM INTO '" + quoted + "'");  // the whole file, with what its write-ahead log holds
    } else {
      import_kb(to, export_kb(from), "bench: a copy of " + shown_kb(from));
    }
  } catch (const store_error&) {
    throw;
  } catch (const std::exception& e) {
    throw failed(e.what());
  }
}

void import_kb(const fs::path& to, const nlohmann::json& doc, const std::string& why) {
  make_room(to);
  auto kb = kb::knowledge_base::open(to, unseeded());  // what is imported replaces the seed
  kb.import_json(doc, kb::update_cause{"import", why, {}});
}

void make_empty_kb(const fs::path& kb_path) {
  make_room(kb_path);
  auto kb = kb::knowledge_base::open(kb_path, unseeded());
  kb.db().exec("INSERT INTO meta(key, value) VALUES('seeded_at', 'never: kblaster bench --empty-kb') "
               "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
}

void make_blank_kb(const fs::path& kb_path) {
  make_room(kb_path);
  auto kb = kb::knowledge_base::open(kb_path);
  const kb::update_cause cause{"manual", "bench: a blank KB (the learning curve's cold arm)", {}};
  for (const auto& st : kb.states())
    for (const auto& o : kb.optimizations(st.name)) kb.put_optimization(st.name, o.technique, 1.0, "", cause);
}

void make_seed_kb(const fs::path& kb_path) {
  make_room(kb_path);
  kb::knowledge_base::open(kb_path);
}

nlohmann::json export_kb(const fs::path& kb_path) {
  if (!on_server(kb_path) && kb_path.extension() == ".json") return read_json_file(kb_path);
  return kb::knowledge_base::open(kb_path, unseeded(kb::open_options::access_mode::read_only)).export_json();
}

void drop_private_kb(const fs::path& kb) {
  if (on_server(kb)) kb::server::drop_database(kb.native());
}

}  // namespace kblaster::engine::bench
