// Databases beside a server KB (kb/server_databases.h): the URI's database part (always), and
// creating, copying and dropping databases (under test_kb_pg, started by tests/kb/pg_cluster.sh;
// skipped on files).
#include "kb/server_databases.h"
#include "kb_test_util.h"

#include <algorithm>

using namespace kblaster::kb;

TEST_CASE("server databases: the database a URI names, in its path or its dbname parameter") {
  CHECK(server::database_of("postgresql://kb:pw@db.example:5432/team_kb?sslmode=require") == "team_kb");
  CHECK(server::database_of("postgresql:///kb?host=/tmp/x&user=u") == "kb");
  CHECK(server::database_of("postgres://db/ignored?user=u&dbname=other") == "other");
  CHECK(server::database_of("postgresql://db.example/my%20kb") == "my kb");
  CHECK(server::database_of("postgresql://db.example") == "");
  CHECK(server::database_of("postgresql://db.example/") == "");
  CHECK(server::database_of("postgresql://db.example?user=u") == "");
}

TEST_CASE("server databases: another database on the same server keeps the rest of the URI, the password too") {
  CHECK(server::with_database("postgresql://kb:pw@db.example:5432/team_kb?sslmode=require", "team_kb_cold") ==
        "postgresql://kb:pw@db.example:5432/team_kb_cold?sslmode=require");
  CHECK(server::with_database("postgresql:///kb?host=/tmp/x&user=u", "postgres") == "postgresql:///postgres?host=/tmp/x&user=u");
  CHECK(server::with_database("postgres://db/ignored?user=u&dbname=other&x=1", "new") ==
        "postgres://db/ignored?user=u&dbname=new&x=1");
  CHECK(server::with_database("postgresql://db.example", "kb_2") == "postgresql://db.example/kb_2");
  CHECK(server::with_database("postgresql://db.example?user=u", "kb_2") == "postgresql://db.example/kb_2?user=u");
  CHECK(server::with_database("postgresql://db.example/kb", "a b/c") == "postgresql://db.example/a%20b%2Fc");
  CHECK(server::database_of(server::with_database("postgresql://db.example/kb", "a b/c")) == "a b/c");
}

TEST_CASE("server databases: derived names are PostgreSQL identifiers of at most 63 bytes, long ones told apart") {
  CHECK(server::database_name("kb", "warm-s1_3fa9c2") == "kb_warm_s1_3fa9c2");
  CHECK(server::database_name("Team.KB", "L1_20_LeakyReLU") == "team_kb_l1_20_leakyrelu");
  const std::string base(40, 'k');
  const auto a = server::database_name(base, "warm_s1_3fa9c2_l2_12_gemm_multiply_leakyrelu");
  const auto b = server::database_name(base, "warm_s1_3fa9c2_l2_12_gemm_multiply_leakyrelu_x");
  CHECK(a.size() == 63);
  CHECK(b.size() == 63);
  CHECK(a != b);
  CHECK(a.starts_with(base + "_warm_s1"));
}

TEST_CASE("server databases: the same server is the URI but for its database") {
  CHECK(server::same_server("postgresql://u:p@h:5432/a?sslmode=require", "postgresql://u:p@h:5432/b?sslmode=require"));
  CHECK_FALSE(server::same_server("postgresql://u:p@h:5432/a", "postgresql://u:p@other:5432/a"));
  CHECK_FALSE(server::same_server("postgresql://u@h/a", "postgresql://v@h/a"));
}

TEST_CASE("server databases: create, copy whole, list and drop beside the test server's KB") {
  if (!kb_test::on_server()) return;
  const auto base = kb_test::server_uri("kb_copy_source");
  const auto copy = server::with_database(base, "kb_copy_source_copy");
  server::drop_database(copy);
  server::drop_database(base);
  CHECK_FALSE(server::database_exists(base));
  server::create_database(base);
  CHECK(server::database_exists(base));
  {
    auto kb = knowledge_base::open(base);
    kb.db().exec("INSERT INTO meta(key, value) VALUES('marker', 'copied') ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  }
  server::create_database(copy, base);  // the whole database, as it is
  {
    auto kb = knowledge_base::open(copy, open_options{open_options::access_mode::read_only, false});
    CHECK(kb.db().query_text("SELECT value FROM meta WHERE key = 'marker'") == "copied");
    CHECK(kb.summary().states > 0);
  }
  const auto names = server::database_names(base);
  CHECK(std::count(names.begin(), names.end(), "kb_copy_source_copy") == 1);

  // A copy of a database in use is refused, saying why.
  {
    auto busy = knowledge_base::open(base);
    const auto second = server::with_database(base, "kb_copy_source_second");
    try {
      server::create_database(second, base);
      FAIL("a copy of a database in use was made");
    } catch (const kb_error& e) {
      CHECK(std::string(e.what()).find("no other kblaster") != std::string::npos);
    }
    CHECK_FALSE(server::database_exists(second));
  }
  server::drop_database(copy);
  server::drop_database(copy);  // gone already: nothing to do
  CHECK_FALSE(server::database_exists(copy));
  server::drop_database(base);
}
