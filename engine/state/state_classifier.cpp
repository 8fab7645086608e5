// The deterministic state classifier (rules documented in state_classifier.h).
#include "engine/state/state_classifier.h"
#include "support/text.h"

#include "engine/profile/metric_value.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <tuple>

namespace kblaster::engine {

bool performance_signature::has(const std::string& n) const {
  return std::any_of(secondary.begin(), secondary.end(), [&](const characteristic& c) { return c.name == n; });
}

std::vector<std::string> performance_signature::secondary_names() const {
  std::vector<std::string> out;
  for (const auto& c : secondary) out.push_back(c.name);
  return out;
}

namespace {

constexpr const char* sol = "GPU Speed Of Light Throughput";

struct lookup {
  const char* section;  // nullptr: any section
  const char* name;
};

// The first of several spellings (details page, then raw page) that the instance has.
std::optional<double> first_value(const kernel_instance& k, std::initializer_list<lookup> names) {
  for (const auto& l : names) {
    const metric* m = l.section ? k.find(l.section, l.name) : k.find(l.name);
    if (m && m->value) return m->value;
  }
  return std::nullopt;
}

// A figure in a rule's evidence: `decimals` decimals, three significant digits from a million.
std::string fmt(double v, int decimals = 1) {
  return std::fabs(v) >= 1e6 ? support::significant_text(v, 3) : support::fixed_text(v, decimals);
}

// The rule's first sentence, which states the issue with its figures.
std::string first_sentence(const std::string& text) {
  std::size_t end = text.find(". ");
  std::string s = end == std::string::npos ? text : text.substr(0, end + 1);
  if (s.size() > 240) s = s.substr(0, 237) + "...";
  return s;
}

// The largest estimated speedup among OPT rules named `rule` whose text matches `filter`.
const rule_result* best_rule(const kernel_instance& k, const char* rule, const char* filter = nullptr) {
  const rule_result* best = nullptr;
  for (const auto* r : k.rules_named(rule)) {
    if (r->type != "OPT" || !r->estimated_speedup) continue;
    if (filter && r->text.find(filter) == std::string::npos) continue;
    if (!best || *r->estimated_speedup > *best->estimated_speedup) best = r;
  }
  return best;
}

void add(performance_signature& s, const char* name, std::string evidence, std::optional<double> speedup = {}) {
  if (s.has(name)) return;
  s.secondary.push_back({name, std::move(evidence), speedup});
}

std::string rule_evidence(const rule_result& r) {
  return "ncu " + r.name + " (est. speedup " + fmt(*r.estimated_speedup) + "%): " + first_sentence(r.text);
}

void classify_primary(const kernel_instance& k, const classifier_thresholds& t, performance_signature& s) {
  auto& f = s.sol;
  if (!f.compute_pct || !f.memory_pct) {
    s.unknown.push_back("primary bottleneck: the profile has no Speed-of-Light section");
    return;
  }
  const double sm = *f.compute_pct, mem = *f.memory_pct;
  const double top = std::max(sm, mem), other = std::min(sm, mem);
  const bool memory_side = mem >= sm;
  auto memory_primary = [&]() -> const char* {
    const double d = f.dram_pct.value_or(-1), l2 = f.l2_pct.value_or(-1), l1 = f.l1_pct.value_or(-1);
    // A streaming kernel moves every byte through L2 as well as DRAM, so the two read alike
    // (H200 vadd: DRAM 62.6 %, L2 a little above). DRAM within the tie is the wall: no cache
    // tuning helps a kernel that must fetch its bytes from memory anyway.
    if (d >= 0 && d + t.memory_level_tie_pct >= l2 && d + t.memory_level_tie_pct >= l1) { s.memory_level = "dram"; return primary::memory_bound_dram; }
    if (l2 >= l1) { s.memory_level = "l2"; return primary::memory_bound_l2; }
    s.memory_level = "l1"; return primary::memory_bound_l1;
  };
  const std::string figures = "Compute (SM) " + fmt(sm) + "%, Memory " + fmt(mem) + "% of peak";
  if (top >= t.saturated_pct) {
    s.sol_band = "saturated";
    s.primary = memory_side ? memory_primary() : primary::compute_bound;
    s.primary_evidence.push_back(figures + ": " + (memory_side ? "memory" : "compute") + " is at or above " +
                                 fmt(t.saturated_pct, 0) + "% (saturated)");
  } else if (sm < t.low_pct && mem < t.low_pct) {
    s.sol_band = "low";
    const double waves = f.waves_per_sm.value_or(1e9);
    const double sms = k.launch.sm_count.value_or(0);
    const bool under_one_wave = waves < 1 || (sms > 0 && static_cast<double>(k.launch.grid.total()) < sms);
    s.primary = under_one_wave ? primary::small_grid : primary::latency_bound;
    s.primary_evidence.push_back(figures + ": both under " + fmt(t.low_pct, 0) + "%");
    if (under_one_wave)
      s.primary_evidence.push_back("grid of " + std::to_string(k.launch.grid.total()) + " blocks is " +
                                   fmt(waves, 2) + " waves: it cannot fill the GPU's " + fmt(sms, 0) + " SMs");
    else
      s.primary_evidence.push_back(fmt(waves, 1) + " waves per SM: enough work, but warps wait (latency)");
  } else if (top - other >= t.heavy_gap_pct || other < t.low_pct) {
    const bool one_sided = other < t.low_pct;
    s.sol_band = one_sided ? "one_sided" : "heavy";
    if (memory_side) {
      const char* bound = memory_primary();
      s.primary = one_sided ? bound : primary::memory_heavy;
    } else {
      s.primary = one_sided ? primary::compute_bound : primary::compute_heavy;
    }
    s.primary_evidence.push_back(figures + ": " + (memory_side ? "memory" : "compute") + " leads by " +
                                 fmt(top - other) + " points" +
                                 (one_sided ? " and the other side is under " + fmt(t.low_pct, 0) + "% (not busy)"
                                            : std::string(" with both sides busy")));
  } else {
    s.sol_band = "balanced";
    s.primary = primary::balanced;
    s.primary_evidence.push_back(figures + ": within " + fmt(t.heavy_gap_pct, 0) + " points of each other");
  }
  const rule_result* launch = best_rule(k, "LaunchConfiguration");
  s.primary_weight = primary_weight_of(s, launch ? launch->estimated_speedup : std::nullopt);
  if (!s.memory_level.empty())
    s.primary_evidence.push_back("busiest memory level: " + s.memory_level + " (DRAM " + fmt(f.dram_pct.value_or(0)) +
                                 "%, L2 " + fmt(f.l2_pct.value_or(0)) + "%, L1/TEX " + fmt(f.l1_pct.value_or(0)) + "%)");
}

// The SM side leads the Speed-of-Light figures (compute-bound, compute-heavy or balanced).
bool compute_side(const performance_signature& s) {
  return s.primary == primary::compute_bound || s.primary == primary::compute_heavy || s.primary == primary::balanced;
}

// FFMA and all FP32 thread instructions as shares of every executed thread instruction: the rates
// default_ncu_metrics() asks for (per elapsed cycle, summed over the SM sub-partitions) times the
// elapsed cycles, over the warp instructions times their average active threads.
void fill_instruction_mix(const kernel_instance& k, performance_signature& s) {
  const auto cycles = first_value(k, {{nullptr, "smsp__cycles_elapsed.avg"}});
  const auto warp_instructions = first_value(k, {{nullptr, "smsp__inst_executed.sum"}});
  const auto threads = first_value(k, {{nullptr, "smsp__thread_inst_executed_per_inst_executed.ratio"}});
  if (!cycles || !warp_instructions || !threads || *warp_instructions <= 0 || *threads <= 0) return;
  auto fma = first_value(k, {{nullptr, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"}});
  if (!fma)
    if (const auto x2 = first_value(k, {{nullptr, "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2"}})) fma = *x2 / 2;
  const auto add = first_value(k, {{nullptr, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"}});
  const auto mul = first_value(k, {{nullptr, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"}});
  if (!fma || !add || !mul) return;
  const double all = *warp_instructions * *threads;
  s.ffma_share = std::clamp(*fma * *cycles / all, 0.0, 1.0);
  s.fp32_share = std::clamp((*fma + *add + *mul) * *cycles / all, 0.0, 1.0);
}

void occupancy_characteristic(performance_signature& s, occupancy_limiter limiter, const std::string& why) {
  switch (limiter) {
    case occupancy_limiter::registers: add(s, secondary::occupancy_limited_by_registers, why); break;
    case occupancy_limiter::shared_memory: add(s, secondary::occupancy_limited_by_shared_memory, why); break;
    case occupancy_limiter::warps:
    case occupancy_limiter::blocks: add(s, secondary::occupancy_limited_by_block_size, why); break;
    case occupancy_limiter::none: break;
  }
}

// A profile of counters alone (state_ncu_metrics(), the loop's profile of a step's best) has no
// rule results: ncu's guided analysis runs on sections. The counter rules below stand in for the
// rules the state reads, from the counters those rules read themselves; on the recorded H100
// reports they name the secondaries the rules name (ncu_state_metrics_test.cpp).
bool counters_only(const kernel_instance& k) { return k.rules.empty(); }

// Uncoalesced global access from counters: the share of the global sectors moved that the
// accesses did not need (SourceCounters' excessive sectors), or global stores that use a few
// bytes of each sector they write (the memory tables' access pattern). The weight, ncu's
// estimate's stand-in, is what the KB matches states by: the excess share, scaled down as far as
// 0.6 for a memory system with little load (fixing the pattern gains less where memory does not
// limit the kernel: ncu's UncoalescedGlobalAccess gives an SpMV with 64 % excess 59 % at 70 %
// memory load and 45 % at 27 %); for stores, the wasted bytes' share of all global sectors.
void counter_coalescing(const kernel_instance& k, const classifier_thresholds& t, performance_signature& s) {
  const auto moved = first_value(k, {{nullptr, "memory_l2_theoretical_sectors_global"}});
  const auto ideal = first_value(k, {{nullptr, "memory_l2_theoretical_sectors_global_ideal"}});
  if (moved && ideal && *moved > 0 && *moved > *ideal) {
    const double excess = (*moved - *ideal) / *moved * 100;
    if (excess >= t.excess_sectors_pct) {
      const double load = std::clamp(s.sol.memory_pct.value_or(100), 0.0, 100.0);
      add(s, secondary::uncoalesced_global_access,
          "ncu counters: " + fmt(excess) + "% of the " + fmt(*moved, 0) + " global sectors moved are beyond the " +
              fmt(*ideal, 0) + " the accesses need (memory at " + fmt(load) + "% of peak)",
          excess * (0.6 + 0.4 * load / 100));
      return;
    }
  }
  const auto stored = first_value(k, {{nullptr, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"}});
  const auto loaded = first_value(k, {{nullptr, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"}}).value_or(0);
  const auto bytes = first_value(k, {{nullptr, "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"}});
  if (stored && bytes && *stored > 0 && *bytes > 0 && *bytes <= t.store_bytes_per_sector) {
    const double share = *stored / (*stored + loaded);
    add(s, secondary::uncoalesced_global_access,
        "ncu counters: global stores use " + fmt(*bytes) + " of the 32 bytes of each sector they write (" +
            fmt(*stored, 0) + " sectors, " + fmt(100 * share) + "% of the global sectors)",
        (1 - *bytes / 32) * share * 100);
  }
}

// Bank conflicts from counters: conflict wavefronts among the wavefronts of shared loads, and of
// shared stores, as a share (SharedMemoryConflicts' n-way conflict), the larger.
void counter_bank_conflicts(const kernel_instance& k, const classifier_thresholds& t, performance_signature& s) {
  std::optional<double> worst;
  std::string ev;
  for (const auto& [op, conflicts, wavefronts] :
       {std::tuple{"loads", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"},
        std::tuple{"stores", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"}}) {
    const auto c = first_value(k, {{nullptr, conflicts}}), w = first_value(k, {{nullptr, wavefronts}});
    if (!c || !w || *w <= 0) continue;
    const double share = *c / *w * 100;
    if (!worst || share > *worst) {
      worst = share;
      ev = "ncu counters: " + fmt(share) + "% of the shared " + op + "' " + fmt(*w, 0) + " wavefronts are bank conflicts";
    }
  }
  if (worst && *worst >= t.rule_speedup_pct) add(s, secondary::shared_memory_bank_conflicts, ev, worst);
}

void classify_secondary(const kernel_instance& k, const classify_context& ctx, performance_signature& s) {
  const auto& t = ctx.thresholds;
  // Uncoalesced global access.
  if (const auto* r = best_rule(k, "UncoalescedGlobalAccess"); r && *r->estimated_speedup >= t.rule_speedup_pct)
    add(s, secondary::uncoalesced_global_access, rule_evidence(*r), r->estimated_speedup);
  else if (const auto* p = best_rule(k, "MemoryCacheAccessPattern", "global");
           p && *p->estimated_speedup >= t.access_pattern_speedup_pct)
    add(s, secondary::uncoalesced_global_access, rule_evidence(*p), p->estimated_speedup);
  else if (counters_only(k))
    counter_coalescing(k, t, s);

  // Shared-memory bank conflicts.
  const rule_result* conflicts = best_rule(k, "SharedMemoryConflicts");
  const rule_result* unc_shared = best_rule(k, "UncoalescedSharedAccess");
  const rule_result* bank = conflicts;
  if (unc_shared && (!bank || *unc_shared->estimated_speedup > *bank->estimated_speedup)) bank = unc_shared;
  if (bank && *bank->estimated_speedup >= t.rule_speedup_pct) {
    std::string ev = rule_evidence(*bank);
    if (auto w = first_value(k, {{nullptr, "L1 Wavefronts Shared Excessive"}}); w && *w > 0)
      ev += "; excessive shared wavefronts " + fmt(*w, 0);
    add(s, secondary::shared_memory_bank_conflicts, ev, bank->estimated_speedup);
  } else if (counters_only(k)) {
    counter_bank_conflicts(k, t, s);
  }

  // Warp divergence.
  const auto active = first_value(k, {{"Warp State Statistics", "Avg. Active Threads Per Warp"},
                                      {nullptr, "smsp__thread_inst_executed_per_inst_executed.ratio"}});
  const rule_result* div = best_rule(k, "ThreadDivergence");
  // From counters, ThreadDivergence's cost: the idle lanes' share of the SM's issued
  // instructions (% of its peak over the elapsed time).
  std::optional<double> idle_issue;
  if (counters_only(k) && active)
    if (const auto issued = first_value(k, {{nullptr, "sm__inst_executed.avg.pct_of_peak_sustained_elapsed"}}))
      idle_issue = (1.0 - *active / 32.0) * *issued;
  if ((active && *active < t.divergence_active_threads) || (div && *div->estimated_speedup >= t.rule_speedup_pct) ||
      (idle_issue && *idle_issue >= t.rule_speedup_pct)) {
    std::string ev = active ? "average active threads per warp " + fmt(*active, 2) + " of 32" : std::string();
    if (auto be = first_value(k, {{nullptr, "Branch Efficiency"}})) ev += "; branch efficiency " + fmt(*be) + "%";
    if (div) ev += "; " + rule_evidence(*div);
    if (idle_issue) ev += "; ncu counters: idle lanes cost " + fmt(*idle_issue) + "% of the SM's issue";
    std::optional<double> cost = div ? div->estimated_speedup : idle_issue;
    // ncu estimates the time divergence costs from the stalls it sees; when the SM's issue is
    // the limit, every idle lane of an issued instruction is issue time lost, and the share of
    // idle lanes is the better figure (a reduction's divergent tree: ncu says 8 %).
    if (active && *active < t.divergence_active_threads && compute_side(s)) {
      const double idle = (1.0 - *active / 32.0) * 100.0;
      if (!cost || idle > *cost) {
        cost = idle;
        ev += "; " + fmt(idle, 0) + "% of the lanes idle while the SM's issue is the limit";
      }
    }
    add(s, secondary::warp_divergence, ev, cost);
  }

  // Occupancy limiters: ncu's block limits, ties resolved towards the block size.
  if (s.sol.theoretical_occupancy_pct && *s.sol.theoretical_occupancy_pct < 100) {
    const auto sm_limit = first_value(k, {{nullptr, "Block Limit SM"}, {nullptr, "launch__occupancy_limit_blocks"}});
    const auto warps = first_value(k, {{nullptr, "Block Limit Warps"}, {nullptr, "launch__occupancy_limit_warps"}});
    const auto regs = first_value(k, {{nullptr, "Block Limit Registers"}, {nullptr, "launch__occupancy_limit_registers"}});
    const auto shared = first_value(k, {{nullptr, "Block Limit Shared Mem"}, {nullptr, "launch__occupancy_limit_shared_mem"}});
    const double inf = 1e18;
    const double lo = std::min({sm_limit.value_or(inf), warps.value_or(inf), regs.value_or(inf), shared.value_or(inf)});
    occupancy_limiter limiter = occupancy_limiter::none;
    if (sm_limit && *sm_limit == lo) limiter = occupancy_limiter::blocks;
    else if (warps && *warps == lo) limiter = occupancy_limiter::warps;
    else if (regs && *regs == lo) limiter = occupancy_limiter::registers;
    else if (shared && *shared == lo) limiter = occupancy_limiter::shared_memory;
    const std::string why = "theoretical occupancy " + fmt(*s.sol.theoretical_occupancy_pct, 0) +
                            "%; resident blocks per SM limited to " + fmt(lo, 0) + " by " + to_string(limiter) +
                            " (block limits: SM " + fmt(sm_limit.value_or(0), 0) + ", warps " + fmt(warps.value_or(0), 0) +
                            ", registers " + fmt(regs.value_or(0), 0) + ", shared " + fmt(shared.value_or(0), 0) +
                            "; block of " + std::to_string(k.launch.block.total()) + " threads, " +
                            fmt(k.launch.registers_per_thread.value_or(0), 0) + " registers/thread)";
    occupancy_characteristic(s, limiter, why);
  }

  // Register spills and local-memory traffic.
  const double local_ld = first_value(k, {{nullptr, "smsp__sass_inst_executed_op_local_ld.sum"}}).value_or(0);
  const double local_st = first_value(k, {{nullptr, "smsp__sass_inst_executed_op_local_st.sum"}}).value_or(0);
  const auto executed = first_value(k, {{nullptr, "Executed Instructions"}, {nullptr, "smsp__inst_executed.sum"}});
  const double local_share = executed && *executed > 0 ? (local_ld + local_st) / *executed : 0;
  const rule_result* local_rule = best_rule(k, "MemoryCacheAccessPattern", "local");
  const bool ptxas_spills = ctx.resources && (ctx.resources->spill_store_bytes > 0 || ctx.resources->spill_load_bytes > 0);
  if (local_share >= t.local_instruction_share || ptxas_spills ||
      (local_rule && *local_rule->estimated_speedup >= t.local_pattern_speedup_pct)) {
    std::string ev = "local-memory loads/stores " + fmt(local_ld + local_st, 0) + " warp instructions (" +
                     fmt(local_share * 100, 1) + "% of executed)";
    if (auto spill = first_value(k, {{nullptr, "Local Memory Spilling Requests"}, {nullptr, "derived__local_spilling_requests"}}))
      ev += "; register-spill requests " + fmt(*spill, 0);
    if (ctx.resources)
      ev += "; ptxas: " + std::to_string(ctx.resources->stack_frame_bytes) + " bytes stack frame, " +
            std::to_string(ctx.resources->spill_store_bytes) + " bytes spill stores, " +
            std::to_string(ctx.resources->spill_load_bytes) + " bytes spill loads";
    if (local_rule) ev += "; " + rule_evidence(*local_rule);
    add(s, secondary::register_spills, ev, local_rule ? local_rule->estimated_speedup : std::nullopt);
  }

  // Atomic contention: many atomic/reduction requests at L2 while the kernel moves little.
  double atomics = 0;
  for (const char* n : {"lts__t_requests_srcunit_tex_op_red.sum", "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum",
                        "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum"})
    atomics += first_value(k, {{nullptr, n}}).value_or(0);
  const double threads = static_cast<double>(k.launch.block.total() * k.launch.grid.total());
  if (atomics > 0 && threads > 0 && atomics / threads >= t.atomic_request_share && s.sol.compute_pct &&
      s.sol.memory_pct && std::max(*s.sol.compute_pct, *s.sol.memory_pct) < t.low_pct) {
    std::string ev = fmt(atomics, 0) + " atomic/reduction requests reached L2 (" + fmt(atomics / threads, 2) +
                     " per thread) while compute and memory stay under " + fmt(t.low_pct, 0) +
                     "%: updates serialise on few addresses";
    if (const auto* imb = best_rule(k, "WorkloadImbalance")) ev += "; " + rule_evidence(*imb);
    add(s, secondary::atomic_contention, ev);
  }

  // Launch-bound: a very short kernel, or a short one launched very often.
  if (s.sol.duration_us) {
    const double us = *s.sol.duration_us;
    if (us < t.launch_bound_us || (ctx.launches_of_same_function >= t.many_launches && us < 2 * t.launch_bound_us))
      add(s, secondary::launch_bound,
          "duration " + fmt(us, 2) + " us (launch overhead is a few us) over " +
              std::to_string(ctx.launches_of_same_function) + " launch(es) of this kernel");
  }

  // Tensor cores unused where the math is a matrix product.
  const auto tensor = first_value(k, {{nullptr, "SM: Pipe Tensor Cycles Active"},
                                      {nullptr, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"}});
  // The roofline chart's figure when the report has it (a full set); else the metric kblaster
  // asks for itself (default_ncu_metrics), counting an FMA as two operations as the chart does.
  auto ffma = first_value(k, {{nullptr, "Predicated-On FFMA Operations Per Cycle"}});
  if (const auto inst = first_value(k, {{nullptr, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"}});
      !ffma && inst)
    ffma = 2 * *inst;
  if (tensor && *tensor < t.tensor_pipe_idle_pct && s.matrix_product && ffma.value_or(1) > 0) {
    std::string ev = "tensor pipe active " + fmt(*tensor, 2) + "% while the kernel (" + k.function +
                     ") is a matrix product done with FP32 FMA" + (ffma ? " (" + fmt(*ffma, 0) + " FFMA ops/cycle)" : std::string());
    // What tensor cores would take over: the FMAs' share of everything the kernel executes.
    std::optional<double> cost;
    if (s.ffma_share) {
      cost = *s.ffma_share * 100.0;
      ev += "; FFMA are " + fmt(*cost, 0) + "% of the executed instructions";
    }
    add(s, secondary::tensor_cores_unused, ev, cost);
  }

  // Integer overhead: the SM side leads, yet the kernel does no floating-point work to speak of.
  if (compute_side(s) && s.fp32_share && *s.fp32_share < t.fp_work_share) {
    const auto pipe = [&](const char* name) {
      return first_value(k, {{nullptr, name}}).value_or(0);
    };
    const double fp16 = pipe("sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_active");
    const double fp64 = pipe("sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active");
    const double tensor_pct = tensor.value_or(0);
    if (fp16 < t.fp_pipe_pct && fp64 < t.fp_pipe_pct && tensor_pct < t.fp_pipe_pct) {
      std::string ev = "SM busy (" + fmt(s.sol.compute_pct.value_or(0)) + "%) with FP32 adds, multiplies and FMAs only " +
                       fmt(*s.fp32_share * 100.0, 1) + "% of the executed instructions and no FP16, FP64 or tensor work";
      std::string pipes;
      for (const auto& [label, metric] : {std::pair{"ALU", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"},
                                          {"XU (division, modulo, conversions)", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"},
                                          {"LSU", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"}})
        if (const double v = pipe(metric); v >= 10) pipes += (pipes.empty() ? "" : ", ") + std::string(label) + " " + fmt(v, 0) + "%";
      if (!pipes.empty()) ev += ": the issue slots go to integer index arithmetic and memory instructions (" + pipes + ")";
      add(s, secondary::integer_overhead, ev);
    }
  }
}

void collect_findings(const kernel_instance& k, performance_signature& s) {
  for (const auto& r : k.rules) {
    if ((r.type != "OPT" && r.type != "WRN") || !r.estimated_speedup) continue;
    s.findings.push_back({r.name, r.type, r.estimated_speedup, r.speedup_type, first_sentence(r.text)});
  }
  std::stable_sort(s.findings.begin(), s.findings.end(), [](const finding& a, const finding& b) {
    return a.estimated_speedup.value_or(0) > b.estimated_speedup.value_or(0);
  });
  if (s.findings.size() > 5) s.findings.resize(5);
}

}  // namespace

double primary_weight_of(const performance_signature& s, std::optional<double> launch_configuration_pct) {
  if (s.static_only || !s.sol.compute_pct || !s.sol.memory_pct) return 0;
  const double top = std::max(*s.sol.compute_pct, *s.sol.memory_pct);
  double w = top / 100.0;
  if (s.sol_band == "low") {
    w = 1.0 - top / 100.0;
    if (s.primary == primary::small_grid && launch_configuration_pct) w = *launch_configuration_pct / 100.0;
  }
  return std::clamp(w, 0.05, 1.0);
}

bool looks_like_matrix_product(const std::string& function) {
  static const std::regex matrix_like(R"((gemm|matmul|mm_|_mm|bmm|conv|attention|attn|linear))", std::regex::icase);
  return std::regex_search(function, matrix_like);
}

// The roofline section's formulas (ncu's SpeedOfLightRooflineChart): DRAM bytes per second
// against bytes per cycle at peak times the DRAM clock; FP32 additions, multiplications and
// twice the FMAs per SM-subpartition cycle times that clock, against the FMA peak, doubled.
namespace {
void fill_achieved_rates(const kernel_instance& k, sol_figures& f) {
  // In base units: the details page prints "Gbyte/second" or "cycle/nsecond" where the raw
  // page (--print-units base) prints byte/second and hz.
  const auto v = [&](const char* name) -> std::optional<double> {
    const metric* m = k.find(name);
    if (!m || !m->value) return std::nullopt;
    return to_base_unit(*m->value, m->unit).value;
  };
  f.dram_bytes_per_s = v("dram__bytes.sum.per_second");
  if (const auto peak = v("dram__bytes.sum.peak_sustained"), clock = v("dram__cycles_elapsed.avg.per_second"); peak && clock)
    f.dram_peak_bytes_per_s = *peak * *clock;
  const auto add = v("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed");
  const auto mul = v("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed");
  auto fma2 = v("derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2");  // the section's, when present
  if (const auto fma = v("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"); !fma2 && fma) fma2 = 2 * *fma;
  const auto sm_clock = v("smsp__cycles_elapsed.avg.per_second");
  if (add && mul && fma2 && sm_clock) f.fp32_flops_per_s = (*add + *mul + *fma2) * *sm_clock;
  if (const auto peak = v("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"),
      clock = v("sm__cycles_elapsed.avg.per_second");
      peak && clock)
    f.fp32_peak_flops_per_s = *peak * 2 * *clock;
}
}  // namespace

performance_signature classify(const kernel_instance& k, const classify_context& ctx) {
  performance_signature s;
  s.id = k.id;
  s.name = k.name;
  s.function = k.function;
  auto& f = s.sol;
  f.compute_pct = first_value(k, {{sol, "Compute (SM) Throughput"}, {nullptr, "sm__throughput.avg.pct_of_peak_sustained_elapsed"}});
  f.memory_pct = first_value(k, {{sol, "Memory Throughput"}, {nullptr, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"}});
  f.dram_pct = first_value(k, {{sol, "DRAM Throughput"}, {nullptr, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"},
                               {nullptr, "dram__throughput.avg.pct_of_peak_sustained_elapsed"}});
  f.l2_pct = first_value(k, {{sol, "L2 Cache Throughput"}, {nullptr, "lts__throughput.avg.pct_of_peak_sustained_elapsed"}});
  f.l1_pct = first_value(k, {{sol, "L1/TEX Cache Throughput"}, {nullptr, "l1tex__throughput.avg.pct_of_peak_sustained_active"}});
  if (const metric* d = k.find(sol, "Duration"); d && d->value)
    f.duration_us = to_base_unit(*d->value, d->unit).value * 1e6;
  else if (const metric* t = k.find("gpu__time_duration.sum"); t && t->value)
    f.duration_us = (t->unit.empty() ? *t->value * 1e-9 : to_base_unit(*t->value, t->unit).value) * 1e6;  // ns on the raw page
  f.elapsed_cycles = first_value(k, {{sol, "Elapsed Cycles"}, {nullptr, "gpc__cycles_elapsed.max"}});
  f.waves_per_sm = k.launch.waves_per_sm;
  f.theoretical_occupancy_pct = first_value(k, {{nullptr, "Theoretical Occupancy"}, {nullptr, "sm__maximum_warps_per_active_cycle_pct"}});
  f.achieved_occupancy_pct = first_value(k, {{nullptr, "Achieved Occupancy"}, {nullptr, "sm__warps_active.avg.pct_of_peak_sustained_active"}});
  s.launch = k.launch;
  fill_achieved_rates(k, f);
  if (const metric* n = k.find("device__attribute_display_name")) s.device.name = n->text;
  const auto major = first_value(k, {{nullptr, "device__attribute_compute_capability_major"}});
  const auto minor = first_value(k, {{nullptr, "device__attribute_compute_capability_minor"}});
  if (major && minor) s.device.compute_capability = std::to_string(static_cast<int>(*major)) + "." + std::to_string(static_cast<int>(*minor));
  s.device.sm_count = first_value(k, {{nullptr, "device__attribute_multiprocessor_count"}});
  s.device.l2_bytes = first_value(k, {{nullptr, "device__attribute_l2_cache_size"}});
  s.device.shared_bytes_per_sm = first_value(k, {{nullptr, "device__attribute_max_shared_memory_per_multiprocessor"}});
  s.device.shared_bytes_per_block_optin = first_value(k, {{nullptr, "device__attribute_max_shared_memory_per_block_optin"}});
  s.device.registers_per_sm = first_value(k, {{nullptr, "device__attribute_max_registers_per_multiprocessor"}});

  // Data reuse: what tiling, register blocking and L2 blocking need to have anything to keep.
  const auto global_ld = first_value(k, {{nullptr, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"}});
  const auto dram_rd = first_value(k, {{nullptr, "dram__sectors_read.sum"}});
  if (global_ld && dram_rd && *dram_rd > 0) s.global_load_reuse = *global_ld / *dram_rd;
  fill_instruction_mix(k, s);
  const auto& t = ctx.thresholds;
  s.matrix_product = looks_like_matrix_product(k.function) ||
                     (s.ffma_share && *s.ffma_share >= t.product_ffma_share && s.global_load_reuse &&
                      *s.global_load_reuse >= t.product_reuse);

  classify_primary(k, ctx.thresholds, s);
  classify_secondary(k, ctx, s);
  collect_findings(k, s);
  if (!f.theoretical_occupancy_pct) s.unknown.push_back("occupancy: no Occupancy section in the profile");
  if (!k.find("Avg. Active Threads Per Warp") && !k.find("smsp__thread_inst_executed_per_inst_executed.ratio"))
    s.unknown.push_back("warp divergence: no WarpStateStats section in the profile");
  if (!k.find("smsp__sass_inst_executed_op_local_ld.sum") && !ctx.resources)
    s.unknown.push_back("local-memory traffic and atomics: no memory tables (MemoryWorkloadAnalysis_Tables) in the profile");
  return s;
}

std::vector<performance_signature> classify_report(const profile_report& report, const classifier_thresholds& t) {
  std::map<std::string, int> launches;
  for (const auto& k : report.kernels) ++launches[k.function];
  std::vector<performance_signature> out;
  out.reserve(report.kernels.size());
  for (const auto& k : report.kernels) {
    classify_context ctx;
    ctx.thresholds = t;
    ctx.launches_of_same_function = launches[k.function];
    out.push_back(classify(k, ctx));
    out.back().launches_in_run = static_cast<int>(report.kernels.size());
  }
  return out;
}

performance_signature classify_static(const kernel_resources& r, const sm_limits& limits, int block_size,
                                      long long dynamic_shared_bytes, const std::string& block_origin) {
  performance_signature s;
  s.static_only = true;
  s.name = r.demangled_name;
  s.function = function_name_of(r.demangled_name);
  s.primary = primary::unknown;
  s.unknown = {"primary bottleneck (needs a profile on a GPU: kblaster profile FILE.cu)",
               "coalescing, bank conflicts, divergence, atomics and launch overhead (measured only)"};
  occupancy_input in;
  in.block_size = block_size;
  in.registers_per_thread = r.registers;
  in.shared_bytes_per_block = r.shared_bytes + dynamic_shared_bytes;
  const occupancy_result occ = compute_occupancy(limits, in);
  s.sol.theoretical_occupancy_pct = occ.occupancy * 100;
  s.primary_evidence.push_back(std::to_string(r.registers) + " registers/thread, " + std::to_string(r.shared_bytes) +
                               " bytes static shared memory, " + std::to_string(r.stack_frame_bytes) +
                               " bytes stack frame on " + r.arch);
  s.primary_evidence.push_back(
      block_origin.empty()
          ? "occupancy computed for an assumed block of " + std::to_string(block_size) +
                " threads (no __launch_bounds__, and no launch in the file with a constant block)"
          : "occupancy computed for a block of " + std::to_string(block_size) + " threads, from " + block_origin);
  if (!occ.error.empty()) s.unknown.push_back("occupancy: " + occ.error);
  else if (occ.limiter != occupancy_limiter::none)
    occupancy_characteristic(s, occ.limiter,
                             "theoretical occupancy " + fmt(occ.occupancy * 100, 0) + "% at " + std::to_string(block_size) +
                                 " threads/block: " + std::to_string(occ.active_blocks) + " blocks per SM, limited by " +
                                 to_string(occ.limiter));
  if (r.spill_store_bytes > 0 || r.spill_load_bytes > 0 || r.local_bytes > 0 || r.stack_frame_bytes >= 256)
    add(s, secondary::register_spills,
        "ptxas: " + std::to_string(r.spill_store_bytes) + " bytes spill stores, " + std::to_string(r.spill_load_bytes) +
            " bytes spill loads, " + std::to_string(r.stack_frame_bytes) + " bytes stack frame (local memory)");
  return s;
}

}  // namespace kblaster::engine
