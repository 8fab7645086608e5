// Databases on a KB server, beside the one a URI names: what a caller that needs private KBs on
// the same server (the bench's learning arms and per-problem KBs, engine/bench/bench_kb.h) uses
// to name, create, copy and drop them. Every statement goes through a maintenance connection to
// the server's `postgres` database (`template1` where there is none), as createdb does; the
// role needs CREATEDB. Errors are kb_error and name the server without its password.
#pragma once

#include <string>
#include <vector>

namespace kblaster::kb::server {

/// The database a postgresql:// URI names: its `dbname` parameter, else its path (percent-
/// decoded); empty when it names none (libpq then takes the user's name).
std::string database_of(const std::string& uri);

/// The URI with database `name` in place of the one it names (the `dbname` parameter or the
/// path; a path is added where it names none). Everything else, the password included, is kept.
std::string with_database(const std::string& uri, const std::string& name);

/// The database a connection through `uri` reaches: database_of(uri), or the server's
/// current_database() when the URI names none. Throws kb_error when it cannot connect.
std::string connected_database(const std::string& uri);

/// A database name for `base` + "_" + `suffix`: lower case, [a-z0-9_] only, at most 63 bytes
/// (PostgreSQL's limit), a longer one cut and told apart by a hash of the whole.
std::string database_name(const std::string& base, const std::string& suffix);

/// Whether the database `uri` names exists on its server.
bool database_exists(const std::string& uri);

/// The names of the server's databases.
std::vector<std::string> database_names(const std::string& uri);

/// Creates the database `uri` names: empty, or (`template_uri` given: a database on the same
/// server) a copy of that one as it is, every table and sequence (CREATE DATABASE ... TEMPLATE:
/// the server needs the template idle, no other session connected to it, and the role its
/// owner). Throws kb_error, saying which of those stood in the way.
void create_database(const std::string& uri, const std::string& template_uri = {});

/// Drops the database `uri` names, when it exists (the server waits a few seconds for sessions
/// that are ending). Throws kb_error.
void drop_database(const std::string& uri);

/// True when the two URIs reach the same server as the same role: equal but for the database.
bool same_server(const std::string& a, const std::string& b);

}  // namespace kblaster::kb::server
