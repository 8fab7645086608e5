// The lowering agent over HTTP: several fences, a truncated answer, the wrong entry point, bare
// code, a wrong language and a refusal (giving up), and the repair loop on a compile error.
#include "engine/agents/lowering_agent.h"
#include "engine/state/profile_summary.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

using namespace kblaster::engine::agents;

namespace {

lowering_input vadd_input(kblaster::kb::knowledge_base& kb) {
  lowering_input in;
  in.source = llm_test::vadd_source();
  in.entry_point = "launch_vadd";
  in.state = "memory_bandwidth_saturated";
  for (const auto& o : kb.optimizations(in.state))
    if (o.technique == "vectorized_memory_access") in.technique = o;
  REQUIRE(in.technique.technique == "vectorized_memory_access");
  in.profile_summary = kblaster::engine::summarize_for_prompt(llm_test::vadd_view());
  in.arch = "sm_90";
  return in;
}

}  // namespace

TEST_CASE("lowering: two different versions are refused; the final one alone is taken") {
  llm_test::seeded_kb k;
  llm_test::served s("lowering_several_fences.jsonl");
  auto r = lower_kernel(*s.client, k.kb, vadd_input(k.kb));
  REQUIRE(r.ok());
  CHECK(r.trace.problems.at(0).kind == problem_kind::several_versions);
  CHECK(r.value->find("float4") != std::string::npos);
  CHECK(r.value->find("extern \"C\" cudaError_t launch_vadd(") != std::string::npos);
  // The prompt holds the kernel, the technique and its KB figures, and nothing of other states.
  const std::string user = nlohmann::json::parse(s.server.requests().at(0).body)["messages"][1]["content"];
  CHECK(user.find("vectorized_memory_access (memory)") != std::string::npos);
  CHECK(user.find("__global__ void vadd") != std::string::npos);
  CHECK(user.find("shared_memory_bank_conflicted") == std::string::npos);
}

TEST_CASE("lowering: truncated, then wrong entry point, then bare code is accepted") {
  llm_test::seeded_kb k;
  llm_test::served s("lowering_truncated_then_bare.jsonl");
  agent_options o;
  o.max_tries = 3;
  auto r = lower_kernel(*s.client, k.kb, vadd_input(k.kb), o);
  REQUIRE(r.ok());
  REQUIRE(r.trace.problems.size() == 2);
  CHECK(r.trace.problems[0].kind == problem_kind::truncated);
  CHECK(r.trace.problems[1].kind == problem_kind::wrong_entry_point);
  CHECK(r.trace.problems[1].message.find("launch_vadd") != std::string::npos);
  CHECK(r.value->rfind("// vadd:", 0) == 0);
  // The third request carried both complaints in order.
  const auto last = nlohmann::json::parse(s.server.requests().at(2).body)["messages"];
  CHECK(last.size() == 6);
  CHECK(last[3]["content"].get<std::string>().find("(truncated)") != std::string::npos);
  CHECK(last[5]["content"].get<std::string>().find("(wrong_entry_point)") != std::string::npos);
}

TEST_CASE("lowering: wrong language, refusal and prose: gives up cleanly") {
  llm_test::seeded_kb k;
  llm_test::served s("lowering_gives_up.jsonl");
  const auto before = k.kb.summary();
  auto r = lower_kernel(*s.client, k.kb, vadd_input(k.kb));
  CHECK(!r.ok());
  CHECK(r.trace.status == agent_status::gave_up);
  REQUIRE(r.trace.problems.size() == 3);
  CHECK(r.trace.problems[0].kind == problem_kind::wrong_language);
  CHECK(r.trace.problems[1].kind == problem_kind::refusal);
  CHECK(r.trace.problems[2].kind == problem_kind::no_code);
  CHECK(k.kb.summary().updates == before.updates);
}

TEST_CASE("lowering: the repair loop feeds the compile error back and the fix passes") {
  llm_test::seeded_kb k;
  llm_test::served s("lowering_repair.jsonl");
  int checks = 0;
  auto check = [&](const std::string& src) -> std::optional<std::string> {
    ++checks;
    // A stand-in for nvcc: the fixture's first answer lacks a semicolon after __ldg(a4 + i).
    if (src.find("__ldg(a4 + i)\n") != std::string::npos)
      return "vadd.cu(18): error: expected a \";\"\n1 error detected in the compilation of \"vadd.cu\".";
    return std::nullopt;
  };
  auto out = lower_with_repair(*s.client, k.kb, vadd_input(k.kb), check, 2);
  REQUIRE(out.source);
  CHECK(out.repairs == 1);
  CHECK(checks == 2);
  REQUIRE(out.failures.size() == 1);
  CHECK(out.source->find("__ldg(a4 + i);") != std::string::npos);
  const auto second = nlohmann::json::parse(s.server.requests().at(1).body)["messages"];
  CHECK(second.back()["content"].get<std::string>().find("expected a \";\"") != std::string::npos);
  CHECK(second.back()["content"].get<std::string>().find("launch_vadd") != std::string::npos);
}

TEST_CASE("lowering: repairs stop at the configured limit") {
  llm_test::seeded_kb k;
  llm_test::served s("lowering_repair.jsonl");
  auto out = lower_with_repair(*s.client, k.kb, vadd_input(k.kb),
                               [](const std::string&) { return std::optional<std::string>("mismatch: max abs error 3.2 at index 1048575"); }, 1);
  CHECK(!out.source);
  CHECK(out.repairs == 1);
  CHECK(out.failures.size() == 2);
}

TEST_CASE("lowering: a note that speaks of an operation the kernel lacks is not shown (issue 36)") {
  llm_test::seeded_kb k;
  lowering_input in;
  in.entry_point = "kb_forward";
  in.state = "undersized_grid_uncoalesced";
  for (const auto& o : k.kb.optimizations(in.state))
    if (o.technique == "warp_shuffle_reduction") in.technique = o;
  REQUIRE(in.technique.technique == "warp_shuffle_reduction");
  const std::string note = in.technique.note;
  REQUIRE_FALSE(note.empty());
  // An SpMV sums its rows: the hint about combining the lanes' partial results is for it.
  in.source =
      "__global__ void spmv(const int* rp, const int* col, const float* v, const float* x, float* y, int n) {\n"
      "  const int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= n) return;\n  float s = 0.f;\n"
      "  for (int j = rp[r]; j < rp[r + 1]; ++j) s += v[j] * x[col[j]];\n  y[r] = s;\n}\n";
  CHECK(lowering_prompts(k.kb, in).second.find("For this state: " + note) != std::string::npos);
  // A row-wise copy sums nothing: the technique is still described, its note is not.
  in.source =
      "__global__ void copy_rows(const float* x, float* y, int n, int cols) {\n"
      "  const int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= n) return;\n"
      "  for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c];\n}\n";
  const auto user = lowering_prompts(k.kb, in).second;
  CHECK(user.find("warp_shuffle_reduction (") != std::string::npos);
  CHECK(user.find(note) == std::string::npos);
  CHECK(user.find("For this state:") == std::string::npos);
}
