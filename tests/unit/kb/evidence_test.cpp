// Evidence-weighted state matching, technique needs and static strategies, on the seed KB.
#include "kb/evidence.h"
#include "kb/seed.h"
#include "kb/state_match.h"
#include "kb_test_util.h"

#include <algorithm>

using namespace kblaster::kb;
using kb_test::temp_dir;

namespace {

kernel_evidence measured(const std::string& primary, double primary_weight,
                         std::vector<observed_characteristic> secondary, std::set<std::string> facts = {}) {
  kernel_evidence e;
  e.primary = primary;
  e.primary_weight = primary_weight;
  e.secondary = std::move(secondary);
  e.facts = std::move(facts);
  return e;
}

std::vector<std::string> names_of(const std::vector<optimization>& v) {
  std::vector<std::string> out;
  for (const auto& o : v) out.push_back(o.technique);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("needs: every technique the seed constrains names known evidence, and the checks hold") {
  const auto doc = nlohmann::json::parse(seed_kb_json());
  std::set<std::string> known(primary_bottlenecks().begin(), primary_bottlenecks().end());
  known.insert(secondary_characteristics().begin(), secondary_characteristics().end());
  known.insert({fact::several_launches, fact::short_launch, fact::matrix_product, fact::data_reuse, fact::many_blocks});
  int constrained = 0;
  for (const auto& [name, t] : doc["$techniques"].items()) {
    for (const auto& clause : needs_of(name).all_of_any_of)
      for (const auto& n : clause) {
        CAPTURE(name);
        CAPTURE(n);
        CHECK(known.count(n));
      }
    constrained += needs_of(name).empty() ? 0 : 1;
  }
  CHECK(constrained >= 10);
  // One long launch of a softmax: no launch overhead to reduce, no matrix product.
  const auto softmax = measured("small_grid", 0.94, {{"uncoalesced_global_access", 0.68}});
  CHECK_FALSE(fits("launch_overhead_reduction", softmax));
  CHECK(*unmet_need("launch_overhead_reduction", softmax) == "needs one of: several_launches, short_launch, launch_bound");
  CHECK_FALSE(fits("tensor_cores_wmma", softmax));
  CHECK_FALSE(fits("kernel_fusion", softmax));
  CHECK(fits("memory_coalescing", softmax));
  CHECK(fits("vectorized_memory_access", softmax));  // no needs
  auto many = softmax;
  many.facts.insert(fact::several_launches);
  CHECK(fits("launch_overhead_reduction", many));
  CHECK(fits("kernel_fusion", many));
  CHECK(fits("an_invented_technique", softmax));  // unknown to the seed: no needs
  // An element-wise kernel reads each byte once: nothing for tiling to keep on chip.
  const auto vadd = measured("memory_bound_dram", 0.9, {});
  for (const char* t : {"shared_memory_tiling", "register_blocking", "l2_cache_blocking", "cp_async_double_buffering"}) {
    CAPTURE(t);
    CHECK_FALSE(fits(t, vadd));
  }
  CHECK(*unmet_need("shared_memory_tiling", vadd) == "needs data_reuse");
  auto reused = vadd;
  reused.facts.insert(fact::data_reuse);
  for (const char* t : {"shared_memory_tiling", "register_blocking", "l2_cache_blocking", "cp_async_double_buffering"}) {
    CAPTURE(t);
    CHECK(fits(t, reused));
  }
}

TEST_CASE("match: the state follows the evidence, never a characteristic the kernel does not show") {
  temp_dir dir;
  auto kb = knowledge_base::open(dir / "a.sqlite");
  SUBCASE("row_softmax: small grid and uncoalesced, one 400 us launch") {
    const auto e = measured("small_grid", 0.94, {{"uncoalesced_global_access", 0.68}});
    const auto m = kb.match_state(e, "sm_90");
    REQUIRE(m);
    CHECK(m->state == "undersized_grid_uncoalesced");
    CHECK(m->exact);
    CHECK_FALSE(m->discovered);
    const auto opts = names_of(kb.optimizations_for(*m, e, "sm_90"));
    REQUIRE(!opts.empty());
    CHECK(opts.front() == "memory_coalescing");
    CHECK_FALSE(has(opts, "launch_overhead_reduction"));
  }
  SUBCASE("launch_overhead_dominated needs launch_bound: a long kernel never gets it") {
    const auto e = measured("small_grid", 0.9, {});
    CHECK(kb.match_state(e)->state == "undersized_grid");
    const auto short_one = measured("small_grid", 0.9, {{"launch_bound", 0.7}});
    CHECK(kb.match_state(short_one)->state == "launch_overhead_dominated");
  }
  SUBCASE("a minor characteristic does not steer: a tiled GEMM with 10% of bank conflicts") {
    const auto e = measured("memory_bound_l1", 0.91,
                            {{"shared_memory_bank_conflicts", 0.103}, {"tensor_cores_unused", default_characteristic_weight}},
                            {fact::matrix_product});
    CHECK(kb.match_state(e)->state == "l1_cache_thrashing");
    const auto strong = measured("memory_bound_l1", 0.84, {{"shared_memory_bank_conflicts", 0.89}});
    CHECK(kb.match_state(strong)->state == "shared_memory_bank_conflicted");
  }
  SUBCASE("another family's state never matches: a compute-bound kernel is not memory-bound") {
    const auto e = measured("compute_bound", 0.9, {{"uncoalesced_global_access", 0.3}});
    const auto m = kb.match_state(e);
    REQUIRE(m);
    CHECK(m->state != "uncoalesced_global_memory");
  }
  SUBCASE("no known state explains enough: a discovered state, with its components' techniques") {
    // Latency-bound with divergence and bank conflicts: no seeded state names both (nor either
    // with a latency primary), so the best known one, the pure latency state, explains little.
    const auto e = measured("latency_bound", 0.4, {{"warp_divergence", 0.7}, {"shared_memory_bank_conflicts", 0.6}});
    const auto m = kb.match_state(e);
    REQUIRE(m);
    CHECK(m->discovered);
    CHECK(m->state == "latency_bound+shared_memory_bank_conflicts+warp_divergence");
    CHECK(m->score < min_explained_share);
    REQUIRE(m->components.size() == 3);
    CHECK(m->components[0] == "latency_bound_memory_stalls");  // the primary's own state
    CHECK(m->components[1] == "divergent_compute");  // then the heaviest characteristic first
    CHECK(m->components[2] == "shared_memory_bank_conflicted");
    const auto opts = names_of(kb.optimizations_for(*m, e));
    REQUIRE(opts.size() >= 2);
    CHECK(opts.front() == "warp_divergence_elimination");
    CHECK(has(opts, "shared_memory_padding"));
    // Adopting it stores the state with those techniques; it then matches as a known state.
    CHECK(kb.adopt_discovered(*m, e) == m->state);
    const auto st = kb.find_state(m->state);
    REQUIRE(st);
    CHECK(st->origin == "discovered");
    CHECK(names_of(kb.optimizations(m->state)).size() == opts.size());
    const auto again = kb.match_state(e);
    CHECK(again->state == m->state);
    CHECK_FALSE(again->discovered);
    CHECK(again->exact);
    CHECK(kb.adopt_discovered(*m, e) == m->state);  // idempotent
  }
  SUBCASE("a full grid is not an undersized one, nor the other way round (issue 36)") {
    // The SpMV after its warp-per-row rewrite: 1,536 blocks of 256 at 1.45 waves, latency-bound,
    // its x gathers still uncoalesced. Half of the latency family's credit used to hand it the
    // undersized-grid state it had left.
    const auto warp_row = measured("latency_bound", 0.73, {{"uncoalesced_global_access", 0.45}});
    const auto m = kb.match_state(warp_row, "sm_90");
    REQUIRE(m);
    CHECK(m->state == "latency_bound_memory_stalls");
    const auto before = measured("small_grid", 0.27, {{"uncoalesced_global_access", 0.66}});
    CHECK(kb.match_state(before, "sm_90")->state == "undersized_grid_uncoalesced");
    // An undersized grid limited by registers is an undersized grid, not a register-limited one.
    const auto small = measured("small_grid", 0.5, {{"occupancy_limited_by_registers", 0.3}});
    CHECK(kb.match_state(small, "sm_90")->state != "latency_bound_register_limited");
  }
  SUBCASE("a matrix product that is mostly FP32 FMAs goes to the tensor-core states, whatever else it shows") {
    // tile_product, the register-blocked SGEMM of tests/fixtures/ncu-h100-rewrites: latency-bound
    // at SM 41 % / memory 48 %, with bank conflicts, uncoalesced stores and 112 registers.
    const auto sgemm = measured("latency_bound", 0.52,
                                {{"shared_memory_bank_conflicts", 0.47}, {"uncoalesced_global_access", 0.42},
                                 {"occupancy_limited_by_registers", 0.3}, {"tensor_cores_unused", 0.69}},
                                {fact::matrix_product, fact::data_reuse});
    const auto hopper = kb.match_state(sgemm, "sm_90");
    REQUIRE(hopper);
    CHECK(hopper->state == "hopper_gemm_without_wgmma");
    CHECK_FALSE(hopper->discovered);
    CHECK(names_of(kb.optimizations_for(*hopper, sgemm, "sm_90")).front() == "wgmma_warpgroup_mma");
    CHECK(kb.match_state(sgemm, "sm_80")->state == "matmul_without_tensor_cores");
    // A GEMM whose instructions are mostly loads is not there yet: tile and block it first.
    auto tiled = measured("memory_bound_l1", 0.91, {{"tensor_cores_unused", 0.37}}, {fact::matrix_product});
    CHECK(kb.match_state(tiled, "sm_90")->state == "l1_cache_thrashing");
  }
  SUBCASE("static evidence claims no state") {
    kernel_evidence e;
    e.primary = "unknown";
    e.measured = false;
    e.secondary = {{"register_spills", default_characteristic_weight}};
    CHECK_FALSE(kb.match_state(e));
  }
}

TEST_CASE("selection offers only techniques whose needs hold") {
  temp_dir dir;
  auto kb = knowledge_base::open(dir / "a.sqlite");
  selection_request r;
  r.state = "launch_overhead_dominated";
  r.k = 10;
  r.evidence = measured("small_grid", 0.9, {{"launch_bound", 0.7}});  // one short launch
  auto picked = kb.select(r);
  std::vector<std::string> names;
  for (const auto& c : picked) names.push_back(c.opt.technique);
  CHECK(has(names, "launch_overhead_reduction"));
  CHECK_FALSE(has(names, "kernel_fusion"));  // one launch: nothing to fuse with
  r.evidence = measured("small_grid", 0.9, {});  // long, single: not even the short-launch techniques
  r.evidence->facts.clear();
  names.clear();
  for (const auto& c : kb.select(r)) names.push_back(c.opt.technique);
  CHECK_FALSE(has(names, "launch_overhead_reduction"));
  CHECK_FALSE(has(names, "kernel_fusion"));
  r.evidence.reset();  // no evidence: the state's list as it is
  CHECK(kb.select(r).size() == 3);
}

TEST_CASE("static strategies: only what resource facts support, or none") {
  temp_dir dir;
  auto kb = knowledge_base::open(dir / "a.sqlite");
  kernel_evidence e;
  e.primary = "unknown";
  e.measured = false;
  CHECK(kb.static_strategies(e).empty());  // nothing known points to a technique
  e.secondary = {{"register_spills", default_characteristic_weight}};
  const auto spills = names_of(kb.static_strategies(e));
  REQUIRE(!spills.empty());
  CHECK(spills.front() == "register_pressure_reduction");
  for (const auto& n : spills) CHECK((n == "register_pressure_reduction" || n == "launch_bounds"));
  e.secondary = {{"occupancy_limited_by_shared_memory", default_characteristic_weight}};
  CHECK(names_of(kb.static_strategies(e)) == std::vector<std::string>{"shared_memory_footprint_reduction"});
}
