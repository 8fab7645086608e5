// Benchmark of the KB at scale: builds a KB with 10,000 states and 100,000 attempts, then prints
// selection latency (p50/p99), attempt-insert throughput and file size per 10,000 attempts.
// Usage: bench_kb [--states N] [--attempts N] [--selections N] [--dir DIR]
#include "kb/knowledge_base.h"
#include "kb/seed.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// CPU time (user + system) of this process: on a shared, loaded machine it varies less than
// wall time, so it is printed beside the wall-clock rates.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::int64_t db_bytes(kblaster::kb::knowledge_base& kb) {
  kb.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return static_cast<std::int64_t>(fs::file_size(kb.path()));
}

void print_latency(const char* what, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us[static_cast<std::size_t>(p * static_cast<double>(us.size() - 1))]; };
  std::printf("%-34s p50 %8.1f us   p99 %8.1f us   max %8.1f us   (%zu calls)\n", what, pct(0.5), pct(0.99),
              us.back(), us.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n_states = 10000, n_attempts = 100000, n_select = 10000;
  fs::path dir = fs::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--states") n_states = std::stoul(argv[i + 1]);
    else if (k == "--attempts") n_attempts = std::stoul(argv[i + 1]);
    else if (k == "--selections") n_select = std::stoul(argv[i + 1]);
    else if (k == "--dir") dir = argv[i + 1];
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  const fs::path path = dir / ("bench_kb_" + std::to_string(::getpid()) + ".sqlite");
  kblaster::kb::open_options opts;
  opts.seed = false;
  auto kb = kblaster::kb::knowledge_base::open(path, opts);

  // States: the seed's, then synthetic ones cycling through its signatures, each listing six
  // techniques with varied priors.
  const auto seed = json::parse(kblaster::kb::seed_kb_json());
  std::vector<std::string> technique_names;
  for (const auto& [name, t] : seed["$techniques"].items()) technique_names.push_back(name);
  std::vector<json> templates;
  for (const auto& [name, s] : seed.items())
    if (name[0] != '$') templates.push_back(s);
  json doc = json::object();
  doc["$techniques"] = seed["$techniques"];
  std::mt19937_64 rng(42);
  std::vector<std::string> state_names;
  for (std::size_t i = 0; i < n_states; ++i) {
    json s = templates[i % templates.size()];
    s["optimizations"] = json::array();
    for (int j = 0; j < 6; ++j)
      s["optimizations"].push_back({{"technique", technique_names[(i * 7 + static_cast<std::size_t>(j) * 5) % technique_names.size()]},
                                    {"prior_speedup", 1.0 + static_cast<double>(rng() % 100) / 100.0}});
    state_names.push_back("state_" + std::to_string(i));
    doc[state_names.back()] = s;
  }
  auto t0 = clock_type::now();
  kb.import_json(doc, {"import", "bench", {}});
  std::printf("import of %zu states: %.2f s\n", n_states, seconds_since(t0));

  const std::int64_t bytes_before = db_bytes(kb);
  const char* archs[] = {"sm_80", "sm_90", "sm_89"};
  t0 = clock_type::now();
  const double cpu0 = cpu_seconds();
  for (std::size_t i = 0; i < n_attempts; ++i) {
    const std::size_t s = rng() % n_states;
    kblaster::kb::attempt a;
    a.task = "bench/task" + std::to_string(i % 250);
    a.trajectory = "t" + std::to_string(i % 8);
    a.iteration = static_cast<int>(i / 1000);
    a.step = static_cast<int>(i % 4);
    a.state_before = state_names[s];
    a.state_after = state_names[(s + 1) % n_states];
    a.technique = technique_names[(s * 7 + (rng() % 6) * 5) % technique_names.size()];
    a.compile_ok = rng() % 10 != 0;
    a.correct = a.compile_ok && rng() % 6 != 0;
    if (a.correct) a.measured_speedup = 0.7 + static_cast<double>(rng() % 200) / 100.0;
    a.predicted_speedup = 1.3;
    a.runtime_ms = 0.5;
    a.elapsed_cycles = 400000;
    a.tokens_by_role = {{"lowering", 3000}, {"state_extractor", 600}};
    a.gpu_name = "NVIDIA H100 80GB HBM3";
    a.arch = archs[i % 3];
    a.code_hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    kb.record_attempt(a);
  }
  const double insert_s = seconds_since(t0);
  const double insert_cpu = cpu_seconds() - cpu0;
  // The same again in batches of 64 (one transaction per batch), as when a batch of rollouts ends.
  std::vector<kblaster::kb::attempt> batch;
  std::vector<kblaster::kb::attempt> all_batched;
  const std::size_t n_batched = n_attempts / 5;
  for (std::size_t i = 0; i < n_batched; ++i) {
    const std::size_t s = rng() % n_states;
    kblaster::kb::attempt a;
    a.task = "bench/batched" + std::to_string(i % 250);
    a.state_before = state_names[s];
    a.state_after = state_names[(s + 1) % n_states];
    a.technique = technique_names[(s * 7 + (rng() % 6) * 5) % technique_names.size()];
    a.compile_ok = true;
    a.correct = true;
    a.measured_speedup = 0.7 + static_cast<double>(rng() % 200) / 100.0;
    a.arch = archs[i % 3];
    a.code_hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    all_batched.push_back(std::move(a));
  }
  const auto tb = clock_type::now();
  const double cpu_b = cpu_seconds();
  for (std::size_t i = 0; i < all_batched.size(); i += 64) {
    batch.assign(all_batched.begin() + static_cast<std::ptrdiff_t>(i),
                 all_batched.begin() + static_cast<std::ptrdiff_t>(std::min(i + 64, all_batched.size())));
    kb.record_attempts(batch);
  }
  const double batched_s = seconds_since(tb);
  const double batched_cpu = cpu_seconds() - cpu_b;
  const std::int64_t bytes_after = db_bytes(kb);
  const std::size_t total_attempts = n_attempts + n_batched;
  std::printf("attempt insert (one transaction each, with numeric update and log): %zu in %.2f s = %.0f attempts/s"
              " (%.0f per CPU second)\n",
              n_attempts, insert_s, static_cast<double>(n_attempts) / insert_s,
              static_cast<double>(n_attempts) / insert_cpu);
  std::printf("file size: %.2f MB total, %.2f MB per 10,000 attempts (incl. statistics, transitions, update log)\n",
              static_cast<double>(bytes_after) / 1e6,
              static_cast<double>(bytes_after - bytes_before) / 1e6 * 10000.0 / static_cast<double>(total_attempts));
  std::printf("attempt insert in batches of 64 (record_attempts): %zu in %.2f s = %.0f attempts/s"
              " (%.0f per CPU second)\n",
              n_batched, batched_s, static_cast<double>(n_batched) / batched_s,
              static_cast<double>(n_batched) / batched_cpu);

  for (auto policy : {kblaster::kb::selection_policy::weighted, kblaster::kb::selection_policy::thompson}) {
    std::vector<double> us;
    kblaster::kb::selection_request req;
    req.policy = policy;
    req.k = 3;
    for (std::size_t i = 0; i < n_select; ++i) {
      req.state = state_names[rng() % n_states];
      req.arch = archs[i % 3];
      req.seed = i;
      const auto t = clock_type::now();
      const auto picks = kb.select(req);
      us.push_back(seconds_since(t) * 1e6);
      if (picks.empty()) return 1;
    }
    print_latency((std::string("select k=3 ") + std::string(to_string(policy))).c_str(), us);
  }
  {
    std::vector<double> us;
    const auto& prim = kblaster::kb::primary_bottlenecks();
    const auto& sec = kblaster::kb::secondary_characteristics();
    for (std::size_t i = 0; i < n_select; ++i) {
      std::vector<std::string> s{sec[i % sec.size()], sec[(i * 3) % sec.size()]};
      const auto t = clock_type::now();
      const auto m = kb.match_state(prim[i % prim.size()], s, archs[i % 3]);
      us.push_back(seconds_since(t) * 1e6);
      if (!m) return 1;
    }
    print_latency("match_state (signature -> state)", us);
  }
  std::printf("KB: %zu states, %zu attempts, file %s\n", n_states, total_attempts, path.c_str());
  if (!std::getenv("KBLASTER_BENCH_KEEP"))  // the WAL and shared-memory files too, not only the database
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  return 0;
}
