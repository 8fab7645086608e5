// Prompt sizes per agent role for every example (examples/**/*.cu, tasks included): the token
// estimate of system + user prompt as each agent would send it on its first try, with a seeded
// KB, the example's recorded profile where there is one, and a replay buffer of one iteration
// (4 trajectories x 3 steps). For the lowering prompt, also what the original KernelBlaster code
// sends for the same kernel (the source, the whole KB rendered as Markdown and the first 4,000
// characters of ncu's output), and the ratio. Exits 1 when a lowering prompt reaches 12,000
// tokens or half of the original's.
#include "engine/agents/lowering_agent.h"
#include "engine/agents/planner.h"
#include "engine/agents/soft_verifier.h"
#include "engine/agents/state_extractor.h"
#include "engine/agents/textual_gradient.h"
#include "engine/source/kernel_locator.h"
#include "engine/llm/token_estimate.h"
#include "engine/optimize/task_brief.h"
#include "engine/task/task.h"
#include "engine/state/profile_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::agents;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The example's recorded H100 profile when the fixtures have one, else vadd's.
std::pair<kernel_view, std::string> profile_for(const fs::path& cu) {
  const fs::path dir = fs::path(KBLASTER_SOURCE_DIR) / "tests/fixtures/ncu-h100";
  for (const std::string& stem : {cu.stem().string(), cu.stem().string() + "_naive", std::string("vadd")}) {
    const auto details = dir / (stem + ".details.csv");
    if (!fs::exists(details)) continue;
    auto o = analyze_recorded(details.string(), (dir / (stem + ".raw.csv")).string());
    if (o.error.empty() && !o.kernels.empty()) return {o.kernels.front(), stem};
  }
  throw std::runtime_error("no recorded profile in " + dir.string());
}

std::string entry_point_of(const std::string& source) {
  const auto symbols = locate_cuda_symbols(source);
  for (const auto& s : symbols)
    if (s.extern_c && s.is_definition) return s.name;
  for (const auto& s : symbols)
    if (s.kind == cuda_symbol_kind::host_launcher) return s.name;
  return symbols.empty() ? "kb_forward" : symbols.front().name;
}

// The whole KB as Markdown, as the original KernelBlaster code puts it in every lowering prompt:
// each state with its description and each of its techniques with description, note and prior.
std::string kb_markdown(kblaster::kb::knowledge_base& kb) {
  std::ostringstream md;
  for (const auto& s : kb.states()) {
    md << "## " << s.name << "\nPrimary: " << s.primary_bottleneck << "; secondary:";
    for (const auto& c : s.secondary) md << " " << c;
    md << "\n" << s.description << "\n";
    for (const auto& o : kb.optimizations(s.name, "sm_90"))
      md << "- " << o.technique << " (" << o.category << "): " << o.description << " " << o.note << " Prior " << o.prior_speedup
         << "x.\n";
  }
  return md.str();
}

// The task of an example's kernel (examples/tasks/NAME/kernel.cu), when it is one.
std::optional<task_spec> task_of(const fs::path& cu) {
  if (!fs::exists(cu.parent_path() / "task.json")) return std::nullopt;
  try {
    return load_task(cu.parent_path().string());
  } catch (const task_error&) {
    return std::nullopt;
  }
}

std::int64_t tokens(const std::pair<std::string, std::string>& p) {
  return llm::estimate_tokens(p.first) + llm::estimate_tokens(p.second);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/kblaster-prompts-XXXXXX";
  if (!::mkdtemp(tmpl)) return 2;
  const fs::path tmp = tmpl;
  int status = 0;
  try {
    auto kb = kblaster::kb::knowledge_base::open(tmp / "kb.sqlite");
    std::vector<fs::path> examples;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(KBLASTER_SOURCE_DIR) / "examples"))
      if (e.path().extension() == ".cu") examples.push_back(e.path());
    std::sort(examples.begin(), examples.end());
    std::printf("%-32s %-18s %8s  %s\n", "example", "role", "tokens", "inputs");
    for (const auto& cu : examples) {
      const std::string source = read_text(cu);
      const auto [view, profile] = profile_for(cu);
      const auto match = kb.match_state(view.signature.primary, view.signature.secondary_names(), "sm_90");
      const std::string state = match ? match->state : "memory_bandwidth_saturated";
      const auto opts = kb.optimizations(state, "sm_90");
      const std::string summary = summarize_for_prompt(view);
      // One iteration of the replay buffer in this state: B = 4 trajectories of T = 3 steps.
      std::vector<kblaster::kb::attempt> attempts;
      for (int i = 0; i < 12; ++i) {
        kblaster::kb::attempt a;
        a.id = i + 1;
        a.task = cu.stem().string();
        a.state_before = state;
        a.state_after = state;
        a.technique = opts.at(static_cast<std::size_t>(i) % std::min<std::size_t>(opts.size(), 4)).technique;
        a.predicted_speedup = 1.3;
        a.measured_speedup = 0.9 + 0.1 * (i % 5);
        a.correct = i % 4 != 3;
        attempts.push_back(a);
      }
      lowering_input low{source, entry_point_of(source), state, opts.at(0), summary, "", "sm_90"};
      if (const auto task = task_of(cu)) low.task_brief = kblaster::engine::optimize::task_brief(*task, source);
      const fs::path ncu_page = fs::path(KBLASTER_SOURCE_DIR) / "tests/fixtures/ncu-h100" / (profile + ".details.csv");
      const auto original_tokens = llm::estimate_tokens(source + kb_markdown(kb) + read_text(ncu_page).substr(0, 4000));
      const std::vector<std::pair<std::string, std::int64_t>> rows{
          {"state_extractor", tokens(state_extractor_prompts(kb, {view, "sm_90"}))},
          {"planner", tokens(planner_prompts(kb, {state, summary, "sm_90", 4}))},
          {"lowering", tokens(lowering_prompts(kb, low))},
          {"soft_verifier", tokens(verifier_prompts({source, source, low.entry_point, opts.at(0).technique}))},
          {"textual_gradient", tokens(gradient_prompts(kb, attempts))}};
      const std::string name = fs::relative(cu, fs::path(KBLASTER_SOURCE_DIR) / "examples").string();
      // KBLASTER_PROMPT_SHOW=tasks/row_softmax/kernel.cu prints that example's lowering prompt whole.
      if (const char* show = std::getenv("KBLASTER_PROMPT_SHOW"); show && name == show) {
        const auto [system, user] = lowering_prompts(kb, low);
        std::printf("---- lowering system prompt ----\n%s\n---- lowering user prompt ----\n%s\n----\n", system.c_str(), user.c_str());
      }
      for (const auto& [role, n] : rows) {
        std::string inputs;
        if (role == "lowering")
          inputs = "entry " + low.entry_point + ", " + std::to_string(source.size()) + " B source (" +
                   std::to_string(llm::estimate_tokens(source)) + " tok), technique " + opts.at(0).technique +
                   (low.task_brief.empty() ? "" : ", task brief " + std::to_string(llm::estimate_tokens(low.task_brief)) + " tok") +
                   "; the original KernelBlaster's: " + std::to_string(original_tokens) + " tok (" +
                   std::to_string(100 * n / std::max<std::int64_t>(original_tokens, 1)) + "%)";
        else if (role == "state_extractor")
          inputs = "profile " + profile + ", state " + state;
        else if (role == "textual_gradient")
          inputs = "12 attempts";
        std::printf("%-32s %-18s %8lld  %s\n", name.c_str(), role.c_str(), static_cast<long long>(n), inputs.c_str());
        if (role == "lowering" && n >= 12000) {
          std::printf("  ^ over the 12,000-token budget\n");
          status = 1;
        }
        if (role == "lowering" && 2 * n >= original_tokens) {
          std::printf("  ^ not under half of the original KernelBlaster's lowering prompt\n");
          status = 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "llm_prompt_report: " << e.what() << "\n";
    status = 2;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return status;
}
