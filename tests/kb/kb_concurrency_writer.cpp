// Helper of kb.concurrency_sigkill: records attempts into a KB one transaction at a time and,
// after each commit returns, appends the attempt's id to a log file and fsyncs it, so the test
// knows which commits a killed writer completed.
#include "kb/knowledge_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: kb_concurrency_writer KB LOG WRITER_ID COUNT\n";
    return 2;
  }
  const std::string writer = argv[3];
  const int count = std::stoi(argv[4]);
  const int log = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log < 0) {
    std::perror("open log");
    return 2;
  }
  try {
    kblaster::kb::open_options o;
    o.busy_timeout_ms = 30000;  // the other writer holds the lock for short moments only
    auto kb = kblaster::kb::knowledge_base::open(argv[1], o);
    const char* states[] = {"uncoalesced_global_memory", "undersized_grid", "register_spilling", "writer_discovered_" };
    const char* techs[] = {"memory_coalescing", "grid_size_tuning", "register_pressure_reduction", "kernel_fusion"};
    for (int i = 0; i < count; ++i) {
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
      a.arch = i % 2 ? "sm_80" : "sm_90";
      a.tokens_by_role = {{"lowering", 1000 + i}};
      const auto id = kb.record_attempt(a);
      const std::string line = std::to_string(id) + "\n";
      if (::write(log, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(log) != 0) {
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
