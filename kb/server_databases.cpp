// Databases beside a KB server's (see the header): the URI's database part, and the few
// statements a maintenance connection runs.
#include "kb/server_databases.h"

#include "kb/error.h"
#include "kb/sql.h"
#include "support/hash.h"

#include <cctype>
#include <optional>

namespace kblaster::kb::server {
namespace {

// Where a URI's parts are: postgresql://[userinfo@]hosts[/dbname][?params].
struct uri_layout {
  std::size_t path_begin = std::string::npos;  ///< after the '/', when there is a path
  std::size_t path_end = std::string::npos;    ///< the '?' or the end
  std::size_t authority_end = 0;               ///< where a path would go
  std::size_t query_begin = std::string::npos; ///< after the '?'
};

uri_layout layout_of(const std::string& uri) {
  uri_layout l;
  const auto scheme = uri.find("://");
  const auto start = scheme == std::string::npos ? 0 : scheme + 3;
  l.authority_end = uri.find_first_of("/?", start);
  if (l.authority_end == std::string::npos) l.authority_end = uri.size();
  if (l.authority_end < uri.size() && uri[l.authority_end] == '/') {
    l.path_begin = l.authority_end + 1;
    l.path_end = uri.find('?', l.path_begin);
    if (l.path_end == std::string::npos) l.path_end = uri.size();
  }
  if (const auto q = uri.find('?', start); q != std::string::npos) l.query_begin = q + 1;
  return l;
}

// The value span of parameter `key` in the query, when present.
std::optional<std::pair<std::size_t, std::size_t>> parameter(const std::string& uri, const uri_layout& l,
                                                             const std::string& key) {
  if (l.query_begin == std::string::npos) return std::nullopt;
  for (std::size_t p = l.query_begin; p <= uri.size();) {
    auto end = uri.find('&', p);
    if (end == std::string::npos) end = uri.size();
    if (uri.compare(p, key.size() + 1, key + "=") == 0) return std::make_pair(p + key.size() + 1, end);
    p = end + 1;
  }
  return std::nullopt;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string percent_encoded(const std::string& s) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string quoted_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A connection to the server's maintenance database, as createdb makes one.
sql::database maintenance_connection(const std::string& uri) {
  try {
    return sql::database::connect_postgres(with_database(uri, "postgres"));
  } catch (const kb_error&) {
    try {
      return sql::database::connect_postgres(with_database(uri, "template1"));
    } catch (const kb_error& e) {
      throw kb_error(e.kind(), "no maintenance connection to the KB server (neither its postgres nor its template1 "
                               "database): " + std::string(e.what()));
    }
  }
}

}  // namespace

std::string database_of(const std::string& uri) {
  const auto l = layout_of(uri);
  if (const auto p = parameter(uri, l, "dbname")) return percent_decoded(uri.substr(p->first, p->second - p->first));
  if (l.path_begin == std::string::npos) return {};
  return percent_decoded(uri.substr(l.path_begin, l.path_end - l.path_begin));
}

std::string with_database(const std::string& uri, const std::string& name) {
  const auto l = layout_of(uri);
  std::string out = uri;
  const auto encoded = percent_encoded(name);
  if (const auto p = parameter(uri, l, "dbname")) return out.replace(p->first, p->second - p->first, encoded);
  if (l.path_begin != std::string::npos) return out.replace(l.path_begin, l.path_end - l.path_begin, encoded);
  return out.insert(l.authority_end, "/" + encoded);
}

std::string connected_database(const std::string& uri) {
  if (auto name = database_of(uri); !name.empty()) return name;
  auto db = sql::database::connect_postgres(uri);
  return db.query_text("SELECT current_database()");
}

std::string database_name(const std::string& base, const std::string& suffix) {
  std::string name;
  for (const char c : base + "_" + suffix) {
    const auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) && u < 128 ? static_cast<char>(std::tolower(u)) : '_';
  }
  constexpr std::size_t limit = 63;
  if (name.size() <= limit) return name;
  const auto tag = support::fnv1a_hex(base + "_" + suffix).substr(0, 8);
  return name.substr(0, limit - tag.size() - 1) + "_" + tag;
}

bool database_exists(const std::string& uri) {
  auto db = maintenance_connection(uri);
  auto s = db.prepare("SELECT count(*) FROM pg_database WHERE datname = ?");
  s.bind(1, connected_database(uri));
  return s.step() && s.get_int(0) > 0;
}

std::vector<std::string> database_names(const std::string& uri) {
  auto db = maintenance_connection(uri);
  auto s = db.prepare("SELECT datname FROM pg_database ORDER BY datname");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.get_text(0));
  return out;
}

void create_database(const std::string& uri, const std::string& template_uri) {
  const auto name = connected_database(uri);
  auto db = maintenance_connection(uri);
  std::string statement = "CREATE DATABASE " + quoted_identifier(name);
  std::string from;
  if (!template_uri.empty()) {
    from = connected_database(template_uri);
    statement += " TEMPLATE " + quoted_identifier(from);
  }
  try {
    db.exec(statement);
  } catch (const kb_error& e) {
    std::string why = e.what();
    if (!from.empty() && why.find("being accessed by other users") != std::string::npos)
      why += " (a copy needs the KB idle: no other kblaster, psql or worker connected to " + from + ")";
    else if (!from.empty() && why.find("must be owner") != std::string::npos)
      why += " (only the owner of " + from + ", or a superuser, may copy it)";
    else if (why.find("permission denied to create database") != std::string::npos)
      why += " (the role needs CREATEDB: ALTER ROLE ... CREATEDB)";
    throw kb_error(e.kind(), "cannot create the database " + name + (from.empty() ? "" : " as a copy of " + from) +
                                 ": " + why);
  }
}

void drop_database(const std::string& uri) {
  const auto name = connected_database(uri);
  auto db = maintenance_connection(uri);
  try {
    db.exec("DROP DATABASE IF EXISTS " + quoted_identifier(name));
  } catch (const kb_error& e) {
    throw kb_error(e.kind(), "cannot drop the database " + name + ": " + e.what());
  }
}

bool same_server(const std::string& a, const std::string& b) {
  return with_database(a, "-") == with_database(b, "-");
}

}  // namespace kblaster::kb::server
