// Helper of the kb.concurrency tests: records attempts into a KB one transaction at a time and,
// after each commit returns, appends the attempt's id to a log file and fsyncs it, so the test
// knows which commits a killed writer completed.
//   kb_concurrency_writer KB LOG WRITER_ID COUNT [THREADS]
// With THREADS, as the optimization loop's trajectories do: each thread opens its own connection
// for every few attempts, and between them selects, exports and copies the KB (VACUUM INTO), so
// that connections of one process open and close while others of the same process hold locks.
#include "kb/knowledge_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex log_mutex;

bool log_id(int log, std::int64_t id) {
  const std::string line = std::to_string(id) + "\n";
  std::lock_guard lock(log_mutex);
  return ::write(log, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(log) == 0;
}

kblaster::kb::attempt attempt_of(const std::string& writer, int i) {
  const char* states[] = {"uncoalesced_global_memory", "undersized_grid", "register_spilling", "writer_discovered_"};
  const char* techs[] = {"memory_coalescing", "grid_size_tuning", "register_pressure_reduction", "kernel_fusion"};
  kblaster::kb::attempt a;
  a.task = "writer" + writer;
  a.trajectory = "t" + std::to_string(i / 10);
  a.step = i;
  a.state_before = i % 4 == 3 ? std::string(states[3]) + writer : states[i % 4];
  a.state_after = states[(i + 1) % 3];
  a.technique = techs[i % 4];
  a.compile_ok = i % 7 != 0;
  a.correct = a.compile_ok && i % 5 != 0;
  if (a.correct) a.measured_speedup = 1.0 + (i % 9) * 0.1;
  a.credits_step = i % 2 == 0;
  a.arch = i % 2 ? "sm_80" : "sm_90";
  a.tokens_by_role = {{"lowering", 1000 + i}};
  return a;
}

kblaster::kb::open_options patient() {
  kblaster::kb::open_options o;
  o.busy_timeout_ms = 30000;  // the other writers hold the lock for short moments only
  return o;
}

// One thread of the threaded mode: attempts `first`, `first + stride`, ... below `count`.
void thread_writes(const std::string& kb_path, int log, const std::string& writer, int first, int stride, int count) {
  namespace fs = std::filesystem;
  for (int i = first; i < count;) {
    auto kb = kblaster::kb::knowledge_base::open(kb_path, patient());
    for (int n = 0; n < 5 && i < count; ++n, i += stride) {
      const auto id = kb.record_attempt(attempt_of(writer, i));
      if (!log_id(log, id)) throw std::runtime_error("cannot write the log");
      kblaster::kb::selection_request r;
      r.state = "undersized_grid";
      r.k = 2;
      r.seed = static_cast<std::uint64_t>(i);
      kb.select(r);
    }
    if (i % 7 == 0) kb.export_json();
    if (i % 11 == 0 && kb.db().kind() == kblaster::kb::sql::dialect::sqlite) {
      const auto copy = fs::path(kb_path).parent_path() / ("copy-" + writer + "-" + std::to_string(first) + ".sqlite");
      std::error_code ec;
      fs::remove(copy, ec);
      kb.db().exec("VACUUM INTO '" + copy.string() + "'");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::cerr << "usage: kb_concurrency_writer KB LOG WRITER_ID COUNT [THREADS]\n";
    return 2;
  }
  const std::string writer = argv[3];
  const int count = std::stoi(argv[4]);
  const int threads = argc == 6 ? std::stoi(argv[5]) : 0;
  const int log = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log < 0) {
    std::perror("open log");
    return 2;
  }
  try {
    if (threads > 0) {
      std::vector<std::thread> pool;
      std::vector<std::string> errors(static_cast<std::size_t>(threads));
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          try {
            thread_writes(argv[1], log, writer, t, threads, count);
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(t)] = e.what();
          }
        });
      for (auto& t : pool) t.join();
      for (const auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    } else {
      auto kb = kblaster::kb::knowledge_base::open(argv[1], patient());
      for (int i = 0; i < count; ++i)
        if (!log_id(log, kb.record_attempt(attempt_of(writer, i)))) {
          std::perror("write log");
          return 2;
        }
    }
  } catch (const std::exception& e) {
    std::cerr << "writer " << writer << ": " << e.what() << "\n";
    return 1;
  }
  ::close(log);
  return 0;
}
