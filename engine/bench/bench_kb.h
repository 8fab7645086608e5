// The bench's KBs (runner.h, and the learning curve's arms, learning_run.h): the shared KB every
// problem writes, and the private KBs a problem or a learning arm starts from (a copy, an empty or
// a blank KB). A KB is an SQLite file or a database on a PostgreSQL server: a postgresql:// URI,
// which is never made absolute or shown with its password (shown_kb).
//
// On a server, a private KB is a database of its own on the same server, beside the shared one:
// <shared>_<run folder>_<tag>[_<problem>] (private_kb; the tag tells run folders of the same name
// apart), made by the role (which needs CREATEDB) and dropped when the run is done with it. What a
// report reads of it afterwards is kept in the run folder as its export, kb.json, where a file KB
// would be kept whole (kb.sqlite). A copy is exact wherever both ends allow it: a file's whole
// copy (SQLite's VACUUM INTO), a database's whole copy on the same server (CREATE DATABASE ...
// TEMPLATE: every attempt, transition, lesson and change, as the learning curve's warm arm needs
// the KB the training runs wrote); between a file and a server, the export imported (statistics,
// lessons, transitions and notes, not the attempts themselves), as `kblaster kb export`/`import`.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace kblaster::engine::bench {

/// True for a KB on a PostgreSQL server (a postgresql:// or postgres:// URI).
bool on_server(const std::filesystem::path& kb);

/// The KB for messages and manifests: a file's absolute path, a server's URI without its password.
std::string shown_kb(const std::filesystem::path& kb);

/// Where a run's private KB goes: `file` when the shared KB is a file; beside a server's shared KB,
/// the database named after its own, the run folder `run_dir` and `what` (a problem's key; empty:
/// the run's own start KB). Throws kb::kb_error when the server must be asked its database's name
/// and cannot be reached.
std::filesystem::path private_kb(const std::filesystem::path& shared, const std::filesystem::path& run_dir,
                                 const std::string& what, const std::filesystem::path& file);

/// A file that exists, or a server database that holds a KB (a seeded, an imported or a
/// deliberately empty one): a database created but left without one is a KB still to make.
bool kb_exists(const std::filesystem::path& kb);

/// The attempts the KB holds (0 when there is none).
std::int64_t attempts_in(const std::filesystem::path& kb);

/// Makes `to` a copy of the KB `from` (see the header's comment for how exact). A file `to` must
/// not exist; a server `to` is a private KB, made anew (a leftover database of that name without
/// a KB, from a copy cut short, is dropped first). Throws store_error naming both, never a password.
void copy_kb(const std::filesystem::path& from, const std::filesystem::path& to);

/// `to` (a file, or a private server KB, made anew) filled with the export `doc`.
void import_kb(const std::filesystem::path& to, const nlohmann::json& doc, const std::string& why);

/// Ablation "no memory": a fresh KB with no seed, marked seeded so that the loop does not seed it.
void make_empty_kb(const std::filesystem::path& kb);

/// The learning curve's cold arm (bench_options::blank_kb): the seed's states and techniques,
/// every prior 1.0 and no note, so that nothing the seed believes about what pays decides a choice.
void make_blank_kb(const std::filesystem::path& kb);

/// A fresh KB holding the shipped seed.
void make_seed_kb(const std::filesystem::path& kb);

/// The KB's export (kb::knowledge_base::export_json); a .json file is one already.
nlohmann::json export_kb(const std::filesystem::path& kb);

/// Drops a private server KB (nothing for a file: the run folder keeps it). Throws kb::kb_error.
void drop_private_kb(const std::filesystem::path& kb);

}  // namespace kblaster::engine::bench
