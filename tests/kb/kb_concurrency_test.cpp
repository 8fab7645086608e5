// Two processes write attempts into one KB at once; one is killed with SIGKILL while writing.
// With THREADS, each process writes from that many threads, each opening and closing its own
// connections between selects, exports and copies, as the loop's trajectories and a bench's
// workers do (issue 50: a KB damaged by two GPU workers).
// The same against a PostgreSQL server when run by tests/kb/pg_cluster.sh.
// Afterwards the file must pass PRAGMA integrity_check, every attempt whose commit returned must
// be there, and the statistics must agree with the replay buffer (attempt and numeric update
// commit together or not at all). Repeated for several rounds on the same file.
#include "kb/knowledge_base.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "FAIL: " << what << "\n";
  }
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    std::perror("execv");
    std::_Exit(127);
  }
  return pid;
}

std::vector<std::int64_t> read_ids(const fs::path& p) {
  std::vector<std::int64_t> ids;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ids.push_back(std::stoll(line));
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: kb_concurrency_test PATH_TO_kb_concurrency_writer [THREADS]\n";
    return 2;
  }
  const std::string writer = argv[1];
  const std::string threads = argc == 3 ? argv[2] : "";
  auto writer_args = [&](const fs::path& log, const std::string& id, int count) {
    std::vector<std::string> args{"", log.string(), id, std::to_string(count)};
    if (!threads.empty()) args.push_back(threads);
    return args;
  };
  std::string tmpl = (fs::temp_directory_path() / "kblaster-kbconc-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return 2;
  const fs::path dir = tmpl;
  // Under tests/kb/pg_cluster.sh, the KB is the throwaway server's database instead of a file.
  const char* server = std::getenv("KBLASTER_TEST_PG_URI");
  const fs::path kb_path = server ? fs::path(server) : dir / "kb.sqlite";
  { auto kb = kblaster::kb::knowledge_base::open(kb_path); }  // seeded once, before the race

  const int per_writer = threads.empty() ? 1500 : 600;
  std::int64_t expected_total = 0;
  for (int round = 0; round < 3; ++round) {
    const fs::path log_a = dir / ("a" + std::to_string(round) + ".log");
    const fs::path log_b = dir / ("b" + std::to_string(round) + ".log");
    auto args_a = writer_args(log_a, "A" + std::to_string(round), per_writer);
    auto args_b = writer_args(log_b, "B" + std::to_string(round), per_writer);
    args_a[0] = args_b[0] = kb_path.string();
    const pid_t a = spawn(writer, args_a);
    const pid_t b = spawn(writer, args_b);
    // Kill A after a different number of its commits each round, while B keeps writing.
    const std::size_t r = static_cast<std::size_t>(round);
    const std::size_t kill_after = threads.empty() ? 100 + 250 * r : 50 + 100 * r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (read_ids(log_a).size() < kill_after && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(a, SIGKILL);
    int status_a = 0, status_b = 0;
    ::waitpid(a, &status_a, 0);
    ::waitpid(b, &status_b, 0);
    expect(WIFSIGNALED(status_a) && WTERMSIG(status_a) == SIGKILL, "writer A was killed by SIGKILL");
    expect(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0, "writer B finished cleanly");

    const auto ids_a = read_ids(log_a), ids_b = read_ids(log_b);
    expect(ids_a.size() >= kill_after && ids_a.size() < static_cast<std::size_t>(per_writer),
           "A was killed mid-way (" + std::to_string(ids_a.size()) + " commits logged)");
    expect(ids_b.size() == static_cast<std::size_t>(per_writer), "B logged every commit");

    auto kb = kblaster::kb::knowledge_base::open(kb_path);
    auto& db = kb.db();
    if (!server)
      expect(db.query_text("PRAGMA integrity_check") == "ok", "integrity_check ok after round " + std::to_string(round));
    auto present = [&](std::int64_t id, const std::string& task) {
      auto& s = db.cached("SELECT count(*) FROM attempts WHERE id = ? AND task = ?");
      kblaster::kb::sql::statement_use use(s);
      s.bind(1, id).bind(2, task);
      return s.step() && s.get_int(0) == 1;
    };
    std::size_t missing = 0;
    for (auto id : ids_a) missing += !present(id, "writerA" + std::to_string(round));
    for (auto id : ids_b) missing += !present(id, "writerB" + std::to_string(round));
    expect(missing == 0, std::to_string(missing) + " committed attempts missing");
    const std::int64_t in_a = db.query_int("SELECT count(*) FROM attempts WHERE task = 'writerA" + std::to_string(round) + "'");
    // A may have committed one attempt per thread that it did not live to log.
    const std::int64_t unlogged = threads.empty() ? 1 : std::stoll(threads);
    expect(in_a >= static_cast<std::int64_t>(ids_a.size()) && in_a <= static_cast<std::int64_t>(ids_a.size()) + unlogged,
           "A's attempts in the KB match its log (" + std::to_string(in_a) + " vs " + std::to_string(ids_a.size()) + ")");
    expected_total += in_a + per_writer;
    const std::int64_t total = db.query_int("SELECT count(*) FROM attempts");
    expect(total == expected_total, "attempt count " + std::to_string(total) + " == " + std::to_string(expected_total));
    // Attempt rows and their numeric updates commit together.
    expect(db.query_int("SELECT sum(attempts) FROM opt_stats WHERE arch = 'all'") == total,
           "statistics count every attempt exactly once");
    expect(db.query_int("SELECT count(*) FROM updates WHERE cause = 'numeric'") == total, "one logged update per attempt");
    std::cout << "round " << round << ": A killed after " << ids_a.size() << " logged commits (" << in_a
              << " in KB), B " << ids_b.size() << "; total " << total << " attempts, integrity ok\n";
  }
  std::error_code ec;
  if (failures == 0) fs::remove_all(dir, ec);
  else std::cerr << "kept " << dir << " for inspection\n";
  return failures == 0 ? 0 : 1;
}
