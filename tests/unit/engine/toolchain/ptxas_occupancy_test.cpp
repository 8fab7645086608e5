// Tests of ptxas -v parsing and of the occupancy calculator against the CUDA runtime's answers
// recorded on an H100 and against ncu's recorded block limits.
#include "engine/profile/ncu_csv_parser.h"
#include "support/files.h"
#include "engine/toolchain/occupancy.h"
#include "engine/toolchain/ptxas_parser.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace kblaster::engine;

namespace {
std::string fx(const std::string& p) { return std::string(KBLASTER_FIXTURES_DIR) + "/" + p; }

const kernel_resources* by_name(const std::vector<kernel_resources>& v, const std::string& mangled) {
  for (const auto& k : v)
    if (k.mangled_name == mangled) return &k;
  return nullptr;
}
}  // namespace

TEST_CASE("ptxas -v for sm_90: nine kernels with registers, smem, stack and barriers") {
  const auto ks = parse_ptxas_output(kblaster::support::read_file(fx("ncu-h100/ptxas_sm90.txt")));
  REQUIRE(ks.size() == 9);
  const auto* tiled = by_name(ks, "_Z12matmul_tiledILi32EEvPKfS1_Pfi");
  REQUIRE(tiled);
  CHECK(tiled->demangled_name == "void matmul_tiled<32>(float const*, float const*, float*, int)");
  CHECK(tiled->arch == "sm_90");
  CHECK(tiled->registers == 32);
  CHECK(tiled->barriers == 1);
  CHECK(tiled->shared_bytes == 8192);
  const auto* spills = by_name(ks, "_Z6spillsPKiPfi");
  REQUIRE(spills);
  CHECK(spills->stack_frame_bytes == 1024);
  CHECK(spills->spill_store_bytes == 0);
  CHECK(spills->cumulative_stack_bytes == 1024);
  CHECK(by_name(ks, "_Z4tinyPf")->registers == 8);
  CHECK(by_name(ks, "_Z4vaddPKfS0_Pfi")->compile_time_ms == doctest::Approx(1.828));
}

TEST_CASE("ptxas -v for sm_80 includes constant memory") {
  const auto ks = parse_ptxas_output(kblaster::support::read_file(fx("ncu-h100/ptxas_sm80.txt")));
  REQUIRE(ks.size() == 9);
  for (const auto& k : ks) CHECK(k.arch == "sm_80");
  CHECK(by_name(ks, "_Z12matmul_tiledILi32EEvPKfS1_Pfi")->constant_bytes == 380);
}

TEST_CASE("ptxas parsing: spills, device-function properties, older formats, garbage") {
  const auto ks = parse_ptxas_output(
      "ptxas info    : Function properties for _Z6helperv\n"
      "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_75'\n"
      "ptxas info    : Function properties for _Z1kPf\n"
      "    96 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 48 bytes lmem, 352 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'plain_c' for 'sm_75'\n"
      "ptxas info    : Used 4 registers\n"
      "random noise line\n");
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].spill_store_bytes == 40);  // not the helper's 8
  CHECK(ks[0].spill_load_bytes == 36);
  CHECK(ks[0].local_bytes == 48);
  CHECK(ks[0].registers == 255);
  CHECK(ks[1].demangled_name == "plain_c");
  CHECK(parse_ptxas_output("").empty());
  CHECK(parse_ptxas_output("not ptxas at all\n\n").empty());
}

TEST_CASE("limits exist for compute capabilities 7.0 to 12.x") {
  for (const char* a : {"7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"}) {
    CAPTURE(a);
    CHECK(limits_for(std::string(a)).has_value());
  }
  CHECK(limits_for("sm_90a")->max_warps_per_sm == 64);
  CHECK(limits_for("sm_120")->max_warps_per_sm == 48);
  CHECK(limits_for("sm_75")->max_warps_per_sm == 32);
  CHECK_FALSE(limits_for("6.1"));
  CHECK_FALSE(limits_for("garbage"));
}

TEST_CASE("occupancy agrees with cudaOccupancyMaxActiveBlocksPerMultiprocessor on an H100") {
  std::istringstream in(kblaster::support::read_file(fx("occupancy/h100_reference.csv")));
  const auto limits = *limits_for(9, 0);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("kernel,", 0) == 0) continue;
    std::istringstream f(line);
    std::string kernel, regs, block, stat, dyn, blocks, status;
    std::getline(f, kernel, ',');
    std::getline(f, regs, ',');
    std::getline(f, block, ',');
    std::getline(f, stat, ',');
    std::getline(f, dyn, ',');
    std::getline(f, blocks, ',');
    std::getline(f, status, ',');
    if (status != "ok") continue;
    occupancy_input o;
    o.block_size = std::stoi(block);
    o.registers_per_thread = std::stoi(regs);
    o.shared_bytes_per_block = std::stoll(stat) + std::stoll(dyn);
    CAPTURE(line);
    CHECK(compute_occupancy(limits, o).active_blocks == std::stoi(blocks));
    ++rows;
  }
  CHECK(rows >= 100);
}

TEST_CASE("occupancy agrees with the Theoretical Occupancy and block limits ncu recorded") {
  const auto limits = *limits_for(9, 0);
  for (const char* name : {"vadd", "matmul_naive", "matmul_tiled", "fma_heavy", "tiny", "transpose_conflicts",
                           "divergent", "spills", "atomic_sum"}) {
    CAPTURE(name);
    const auto report = parse_ncu_details(kblaster::support::read_file(fx(std::string("ncu-h100/") + name + ".details.csv")));
    const auto& k = report.kernels.at(0);
    occupancy_input o;
    o.block_size = static_cast<int>(k.launch.block.total());
    o.registers_per_thread = static_cast<int>(*k.launch.registers_per_thread);
    o.shared_bytes_per_block = static_cast<long long>(*k.launch.static_shared_bytes + *k.launch.dynamic_shared_bytes);
    // ncu prints the carveout in Kbyte with two decimals; the driver's carveouts are whole KiB.
    o.shared_carveout = static_cast<long long>(*k.launch.shared_config_bytes / 1024 + 0.5) * 1024;
    const auto r = compute_occupancy(limits, o);
    CHECK(r.occupancy * 100 == doctest::Approx(*k.value("Occupancy", "Theoretical Occupancy")));
    CHECK(r.blocks_by_registers == doctest::Approx(*k.value("Block Limit Registers")));
    CHECK(r.blocks_by_shared == doctest::Approx(*k.value("Block Limit Shared Mem")));
    CHECK(r.blocks_by_warps == doctest::Approx(*k.value("Block Limit Warps")));
  }
}

TEST_CASE("occupancy limiters and errors") {
  const auto l = *limits_for(9, 0);
  auto occ = [&](int block, int regs, long long smem) {
    occupancy_input o;
    o.block_size = block;
    o.registers_per_thread = regs;
    o.shared_bytes_per_block = smem;
    return compute_occupancy(l, o);
  };
  CHECK(occ(256, 32, 0).limiter == occupancy_limiter::none);
  CHECK(occ(256, 128, 0).limiter == occupancy_limiter::registers);
  CHECK(occ(256, 128, 0).occupancy == doctest::Approx(0.25));
  CHECK(occ(256, 32, 100000).limiter == occupancy_limiter::shared_memory);
  CHECK(occ(32, 16, 0).limiter == occupancy_limiter::blocks);
  CHECK(occ(32, 16, 0).occupancy == doctest::Approx(0.5));
  CHECK(occ(96, 16, 0).limiter == occupancy_limiter::warps);
  CHECK_FALSE(occ(2048, 16, 0).error.empty());
  CHECK_FALSE(occ(0, 16, 0).error.empty());
  CHECK_FALSE(occ(256, 300, 0).error.empty());
  CHECK_FALSE(occ(256, 32, 300000).error.empty());
  CHECK_FALSE(occ(1024, 255, 0).error.empty());  // 1024 × 255 registers cannot fit
  const auto turing = *limits_for(7, 5);
  occupancy_input o;
  o.block_size = 1024;
  o.registers_per_thread = 32;
  CHECK(compute_occupancy(turing, o).occupancy == doctest::Approx(1.0));
}

TEST_CASE("PTX launch bounds: .maxntid, .reqntid and .minnctapersm of each entry, by mangled name") {
  // As nvcc 13.0 writes them (-arch=sm_90 -keep), abridged.
  const std::string ptx =
      ".visible .entry _Z5plainPf(\n\t.param .u64 .ptr .align 1 _Z5plainPf_param_0\n)\n{\n\tret;\n}\n"
      ".visible .entry ck(\n\t.param .u64 .ptr .align 1 ck_param_0\n)\n.maxntid 512, 1, 1\n{\n\tret;\n}\n"
      ".visible .entry _ZN3ops5scaleEPffi(\n\t.param .u64 _ZN3ops5scaleEPffi_param_0\n)\n.maxntid 128, 1, 1\n{\n}\n"
      ".visible .entry _ZN3ops2tkILi64EEEvPf(\n\t.param .u64 p\n)\n.maxntid 16, 4, 1\n.minnctapersm 2\n{\n}\n"
      ".visible .entry req(\n)\n.reqntid 32, 2, 1\n{\n}\n";
  std::vector<kernel_resources> rs(6);
  rs[0].mangled_name = "_Z5plainPf";
  rs[1].mangled_name = "ck";
  rs[2].mangled_name = "_ZN3ops5scaleEPffi";
  rs[3].mangled_name = "_ZN3ops2tkILi64EEEvPf";
  rs[4].mangled_name = "req";
  rs[5].mangled_name = "absent";
  add_ptx_launch_bounds(rs, ptx);
  CHECK(rs[0].max_threads_per_block == 0);
  CHECK(rs[1].max_threads_per_block == 512);
  CHECK(rs[2].max_threads_per_block == 128);
  CHECK(rs[3].max_threads_per_block == 64);
  CHECK(rs[3].min_blocks_per_sm == 2);
  CHECK(rs[4].max_threads_per_block == 64);
  CHECK(rs[5].max_threads_per_block == 0);
}
