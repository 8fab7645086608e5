// The loop when the evaluator fails rather than the candidate (issue 35): the live evaluator
// throws evaluation_error once a judge that keeps failing has been retried
// (tests/unit/engine/evaluate/judge_failure_test.cpp). The run stops with that error; the
// candidate is not recorded in the KB or the checkpoint, and the lowering agent is never asked
// to repair it. A resumed run measures it afresh.
#include "engine/llm/llm_client.h"
#include "engine/optimize/optimize.h"
#include "kb/knowledge_base.h"
#include "support/files.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace {
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
using llm_test::temp_dir;

const std::string marker = "// rewritten by the model\n";

// Passes every source; a source the model wrote throws as the live evaluator does when its
// harness keeps dying, until `healthy` is set.
class dying_judge final : public evaluator {
 public:
  evaluation evaluate(const std::string& task, const std::string& source, const evaluation_request& request) override {
    const bool rewritten = source.find(marker) != std::string::npos;
    if (rewritten && !request.profile) ++rewritten_calls;  // its verification (a new best is profiled after)
    if (rewritten && !healthy)
      throw evaluation_error("evaluator error, not the candidate's: kblaster-harness on GPU 0 failed 3 times on "
                             "'evaluate': the harness died of signal 9 (Killed) during 'evaluate'");
    evaluation e;
    e.code_hash = source_hash(task, source);
    e.compile_ok = e.correct = true;
    e.verdict = "pass";
    e.runtime_ms = rewritten ? 0.5 : 1.0;
    e.reference_ms = 1.0;
    e.gpu_seconds = 0.1;
    e.arch = "sm_90";
    if (request.profile) {  // a state for the KB to choose a technique in
      profile_snapshot p;
      p.kernel = "vector_add";
      p.primary = "memory_bound_dram";
      p.summary = "memory bound, DRAM throughput 88% of peak";
      e.profile = p;
    }
    return e;
  }
  std::string describe() const override { return "a judge that dies on the model's candidates"; }
  bool healthy = false;
  std::atomic<int> rewritten_calls{0};  ///< the model's candidates verified (or tried to be)
};

// Answers every question with the input kernel rewritten (marked), and keeps what it was asked.
class rewriting_model final : public llm::chat_backend {
 public:
  explicit rewriting_model(std::string input) : input_(std::move(input)) {}
  llm::chat_response send(const llm::chat_request& r) override {
    {
      std::lock_guard lock(mutex_);
      asked.push_back(r);
    }
    llm::chat_response a;
    a.text = r.agent_role == "lowering" ? "```cuda\n" + marker + input_ + "```\n" : "{}";
    a.finish_reason = "stop";
    a.usage = {100, 50, false};
    return a;
  }
  std::string describe() const override { return "rewriting test model"; }
  std::mutex mutex_;
  std::vector<llm::chat_request> asked;

 private:
  std::string input_;
};

}  // namespace

TEST_CASE("optimize: an evaluator error stops the run; the candidate is not recorded, not kept, not sent for repair") {
  temp_dir dir;
  const auto task = load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add");
  const auto input = kblaster::support::read_file(task.kernel);
  dying_judge judge;
  auto backend = std::make_unique<rewriting_model>(input);
  auto* model_answers = backend.get();
  llm::llm_client model(std::move(backend), {});
  run_environment env;
  env.kb_path = dir / "kb.sqlite";
  env.eval = &judge;
  env.model = &model;
  env.out_dir = dir / "run";
  loop_options o;
  o.breadth = 1;
  o.depth = 1;
  o.iterations = 1;
  o.mechanical_first = false;  // the step goes to the model
  o.max_repairs = 3;

  const auto r = run_optimization(task, o, env);
  MESSAGE("stopped: " << r.stop_reason.to_string());
  CHECK(r.stop_reason.kind == stop_kind::error);
  CHECK(r.stop_reason.to_string().find("evaluator error, not the candidate's") != std::string::npos);
  CHECK(judge.rewritten_calls.load() == 1);  // measured once, never retried by the loop as a repair
  int lowering = 0, repairs = 0;
  for (const auto& q : model_answers->asked) {
    if (q.agent_role == "lowering") ++lowering;
    for (const auto& m : q.messages)
      if (m.content.find("Your kernel failed the check") != std::string::npos) ++repairs;
  }
  CHECK(lowering == 1);
  CHECK(repairs == 0);  // nothing was wrong with the kernel: nothing to repair
  const auto rewritten_hash = source_hash(task.name, marker + input);
  {
    auto kb = kblaster::kb::knowledge_base::open(env.kb_path);
    for (const auto& a : kb.attempts(0)) CHECK(a.code_hash != rewritten_hash);
  }
  // The checkpoint keeps no evaluation of it, and no step that measured it.
  CHECK_FALSE(std::filesystem::exists(env.out_dir / "evaluations" / (rewritten_hash + ".json")));
  CHECK(kblaster::support::read_file_if_exists(env.out_dir / "steps.jsonl").value_or("").find(rewritten_hash) ==
        std::string::npos);

  // Resumed once the judge is well: the candidate is measured afresh, not served a verdict.
  judge.healthy = true;
  const auto resumed = run_optimization(task, o, env);
  CHECK(resumed.stop_reason.kind == stop_kind::finished);
  CHECK(judge.rewritten_calls.load() == 2);
  CHECK(resumed.best_source == marker + input);
}
