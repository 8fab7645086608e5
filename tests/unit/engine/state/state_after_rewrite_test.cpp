// The state after a rewrite step (issue 36 item 3), on kernels of the kind a step produces,
// recorded on an H100 with the engine's own ncu command (tests/fixtures/ncu-h100-rewrites/), and
// on the two H100 cases the issue describes but no report of which was kept, rebuilt from the
// figures it gives. Each check here failed on the classifier and matcher before issue 36.
#include "engine/profile/ncu_csv_parser.h"
#include "engine/state/state_classifier.h"
#include "engine/state/state_evidence.h"
#include "kb/knowledge_base.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

using namespace kblaster;
using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

fs::path dir() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100-rewrites"; }

performance_signature recorded(const std::string& name) {
  auto report = parse_ncu_details(support::read_file((dir() / (name + ".details.csv")).string()));
  merge_ncu_raw(report, support::read_file((dir() / (name + ".raw.csv")).string()));
  const auto sigs = classify_report(report);
  REQUIRE(sigs.size() == 1);
  return sigs.front();
}

class scratch_kb {
 public:
  scratch_kb() {
    std::string tmpl = (fs::temp_directory_path() / "kblaster-rewrite-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()));
    dir_ = tmpl;
    kb_ = std::make_unique<kb::knowledge_base>(kb::knowledge_base::open(dir_ / "kb.sqlite"));
  }
  ~scratch_kb() {
    kb_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string state_of(const performance_signature& s, const std::string& arch = "sm_90") {
    const auto m = kb_->match_state(kb_evidence(s), arch);
    REQUIRE(m);
    return m->state;
  }

 private:
  fs::path dir_;
  std::unique_ptr<kb::knowledge_base> kb_;
};

double weight(const performance_signature& s, const char* name) { return kb_evidence(s).weight_of(name); }

// A profile built from the figures an issue gives: Speed of Light, the grid, the lanes, the
// instruction mix (FP32 instructions per cycle against all executed), pipes and rules.
struct described {
  double sm = 0, mem = 0, dram = 0, l2 = 0, l1 = 0;
  double waves = 10;
  double active_threads = 32;
  double fp32_share = 0.3, ffma_share = 0.2;  // of the executed thread instructions
  double xu_pct = 0, alu_pct = 0, lsu_pct = 0;
  double thread_divergence_pct = 0;  // ncu's ThreadDivergence estimate, 0: not fired
  std::string function = "k";

  kernel_instance instance() const {
    kernel_instance k;
    k.name = function + "(float*)";
    k.function = function;
    k.launch.grid = {65536, 1, 1};
    k.launch.block = {256, 1, 1};
    k.launch.sm_count = 132;
    k.launch.waves_per_sm = waves;
    const char* sec = "GPU Speed Of Light Throughput";
    for (auto [n, v] : {std::pair{"Compute (SM) Throughput", sm}, {"Memory Throughput", mem}, {"DRAM Throughput", dram},
                        {"L2 Cache Throughput", l2}, {"L1/TEX Cache Throughput", l1}})
      k.metrics.push_back({sec, "", n, "%", std::to_string(v), v});
    const double cycles = 1e6, warp_instructions = 1e8;
    const double per_cycle = warp_instructions * active_threads / cycles;  // thread instructions per cycle
    for (auto [n, v] : {std::pair{"smsp__cycles_elapsed.avg", cycles},
                        {"smsp__inst_executed.sum", warp_instructions},
                        {"smsp__thread_inst_executed_per_inst_executed.ratio", active_threads},
                        {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", ffma_share * per_cycle},
                        {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", (fp32_share - ffma_share) * per_cycle},
                        {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 0.0},
                        {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 0.0},
                        {"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", xu_pct},
                        {"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", alu_pct},
                        {"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", lsu_pct}})
      k.metrics.push_back({"", "", n, "", std::to_string(v), v});
    k.metrics.push_back({"Warp State Statistics", "", "Avg. Active Threads Per Warp", "", std::to_string(active_threads),
                         active_threads});
    if (thread_divergence_pct > 0)
      k.rules.push_back({"WarpStateStats", "ThreadDivergence", "OPT", "local", thread_divergence_pct,
                         "Instructions are executed in warps, which are groups of 32 threads."});
    k.reindex();
    return k;
  }
};

}  // namespace

TEST_CASE("a tiled transpose is memory-bound: it does no arithmetic (issue 36)") {
  scratch_kb kb;
  // Recorded: 8192 x 8192 through a 32 x 33 tile, DRAM 62 %, SM 54 % of issue for its index math.
  const auto big = recorded("transpose_tiled");
  CHECK(big.primary == "memory_bound_dram");
  CHECK(big.sol_band == "one_sided");  // within 10 points, but the SM side is under 60 %: not busy
  CHECK(big.secondary.empty());
  CHECK(big.fp32_share.value_or(1) < 0.01);
  CHECK(kb.state_of(big) == "memory_bandwidth_saturated");
  // Recorded: 1000 x 700 (the size of the capture test program), 22 x 32 blocks: under one wave.
  CHECK(kb.state_of(recorded("transpose_tiled_small")) == "undersized_grid");
  // Described: the transpose the issue saw filed as fp32_compute_saturated, its SM side ahead of
  // its memory side while it executes no floating-point instruction.
  described t;
  t.sm = 66, t.mem = 48, t.dram = 40, t.l2 = 48, t.l1 = 30;
  t.fp32_share = 0, t.ffma_share = 0, t.alu_pct = 45, t.lsu_pct = 25;
  const auto s = classify(t.instance());
  CHECK(s.primary == "compute_bound");
  CHECK(s.has("integer_overhead"));
  CHECK(kb.state_of(s) == "integer_overhead_compute");
}

TEST_CASE("an SpMV rewritten warp per row is no longer an undersized grid (issue 36)") {
  scratch_kb kb;
  // 12,288 rows: one thread per row launches 96 blocks on 132 SMs; a warp per row 1,536 blocks.
  const auto before = recorded("spmv_thread_row_small");
  CHECK(before.primary == "small_grid");
  CHECK(kb.state_of(before) == "undersized_grid_uncoalesced");
  const auto after = recorded("spmv_warp_row_small");
  CHECK(after.launch.grid.x == 1536);
  CHECK(after.primary == "latency_bound");
  CHECK(after.has("uncoalesced_global_access"));  // its gathers of x still are
  CHECK(kb.state_of(after) == "latency_bound_memory_stalls");
  // 100,000 rows (the 782 and 12,500 blocks): both L2-bound on uncoalesced traffic.
  CHECK(recorded("spmv_thread_row").launch.grid.x == 782);
  CHECK(kb.state_of(recorded("spmv_thread_row")) == "uncoalesced_global_memory");
  CHECK(recorded("spmv_warp_row").launch.grid.x == 12500);
  CHECK(kb.state_of(recorded("spmv_warp_row")) == "uncoalesced_global_memory");
}

TEST_CASE("a register-blocked SGEMM without tensor cores is where tensor cores and wgmma are offered (issue 36)") {
  scratch_kb kb;
  for (const char* name : {"sgemm_regblock", "tile_product"}) {  // the second's name says nothing of a GEMM
    CAPTURE(name);
    const auto s = recorded(name);
    CHECK(s.matrix_product);
    REQUIRE(s.ffma_share);
    CHECK(*s.ffma_share == doctest::Approx(0.69).epsilon(0.02));
    CHECK(s.has("tensor_cores_unused"));
    CHECK(weight(s, "tensor_cores_unused") == doctest::Approx(*s.ffma_share).epsilon(0.01));
    CHECK(kb_evidence(s).facts.count(kb::fact::matrix_product));
    CHECK(kb.state_of(s, "sm_90") == "hopper_gemm_without_wgmma");
    CHECK(kb.state_of(s, "sm_80") == "matmul_without_tensor_cores");
  }
}

TEST_CASE("an interleaved shared-memory reduction is not FP32-bound (issue 36)") {
  scratch_kb kb;
  // Recorded: 2^24 floats, 256 per block, tid % (2 * stride): SM 78 % on XU (the modulo) and
  // ALU, memory 37 %, 0.4 % FP32 instructions.
  const auto s = recorded("reduce_interleaved");
  CHECK(s.primary == "compute_bound");
  CHECK(s.has("integer_overhead"));
  CHECK(kb.state_of(s) == "integer_overhead_compute");
  // Described: SM 74 %, memory 34 %, divergent warps (21 of 32 lanes active), ncu's
  // ThreadDivergence estimate 8 %: the idle lanes of an issue-bound kernel weigh more than that.
  described r;
  r.sm = 74, r.mem = 34, r.dram = 10, r.l2 = 12, r.l1 = 34;
  r.active_threads = 21, r.thread_divergence_pct = 8;
  r.fp32_share = 0.12, r.ffma_share = 0, r.xu_pct = 40, r.alu_pct = 50;
  const auto d = classify(r.instance());
  CHECK(d.primary == "compute_bound");
  CHECK(d.has("warp_divergence"));
  CHECK_FALSE(d.has("integer_overhead"));  // 12 % of its instructions are FP32 adds
  CHECK(weight(d, "warp_divergence") == doctest::Approx(1 - 21.0 / 32).epsilon(0.01));
  CHECK(kb.state_of(d) == "divergent_compute");
  // The same lanes in a memory-bound kernel cost what ncu says: latency hides them.
  r.sm = 30, r.mem = 85, r.dram = 85;
  CHECK(weight(classify(r.instance()), "warp_divergence") == doctest::Approx(0.08));
}

TEST_CASE("a kernel doing floating-point work keeps its FP32 state; an FMA chain is no matrix product") {
  scratch_kb kb;
  described f;
  f.sm = 85, f.mem = 5, f.dram = 1, f.l2 = 2, f.l1 = 5;
  f.fp32_share = 0.9, f.ffma_share = 0.9;
  const auto s = classify(f.instance());
  CHECK_FALSE(s.has("integer_overhead"));
  CHECK_FALSE(s.matrix_product);  // FFMA-heavy, but it re-reads no loaded data
  CHECK(kb.state_of(s) == "fp32_compute_saturated");
}
