// A deferred model's rounds, counted: the loop run as `kblaster optimize --batch files:DIR` runs
// it (the real files provider, a fresh client per round as each command makes one), each round's
// requests answered by a stand-in model into the batch folder and the run resumed, until it ends.
// A round is one hand-over: one batch, which a provider's batch interface may take hours to
// answer. Shared by loop_rounds_test (the bound) and tests/bench/bench_rounds (the figures).
#pragma once

#include "engine/llm/deferred_backend.h"
#include "engine/llm/llm_client.h"
#include "engine/optimize/optimize.h"
#include "support/files.h"
#include "tests/unit/engine/optimize/feature_evaluator.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loop_test {

namespace fs = std::filesystem;
namespace llm = kblaster::engine::llm;
using kblaster::engine::task_spec;
using json = nlohmann::json;

/// What a stand-in model answers to a request of `role` whose text (the system prompt, then each
/// message, as an answer book matches them) is `text`.
using answerer = std::function<std::string(const std::string& role, const std::string& text)>;

/// The usage a stand-in reports: about four characters a token, the same whichever way it is asked.
inline llm::token_usage usage_of(const std::string& text, const std::string& answer) {
  return {static_cast<std::int64_t>(text.size() / 4 + 1), static_cast<std::int64_t>(answer.size() / 4 + 1), true};
}

/// The same stand-in answering at once: the synchronous run a deferred one must reach.
class answering_backend final : public llm::chat_backend {
 public:
  explicit answering_backend(answerer answer) : answer_(std::move(answer)) {}
  llm::chat_response send(const llm::chat_request& r) override {
    std::string text = r.system;
    for (const auto& m : r.messages) text += "\n" + m.content;
    llm::chat_response out;
    out.text = answer_(r.agent_role, text);
    out.finish_reason = "stop";
    out.model = "stand-in";
    out.usage = usage_of(text, out.text);
    return out;
  }
  std::string describe() const override { return "stand-in model answering at once"; }

 private:
  answerer answer_;
};

/// Answers every requests-N.jsonl of `batch` that has no results file yet, in OpenAI's batch
/// output format, as tools/batch/answer_from_book.py does with a book. Returns how many.
inline int answer_batch_folder(const fs::path& batch, const answerer& answer) {
  int answered = 0;
  for (const auto& e : fs::directory_iterator(batch)) {
    const auto name = e.path().filename().string();
    if (!std::regex_match(name, std::regex(R"(requests-\d+\.jsonl)"))) continue;
    const auto results = batch / (e.path().stem().string() + ".results.jsonl");
    if (fs::exists(results)) continue;
    std::string out;
    std::istringstream in(kblaster::support::read_file(e.path()));
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto req = json::parse(line);
      const auto id = req.at("custom_id").get<std::string>();
      std::string text;
      for (const auto& m : req.at("body").at("messages"))
        text += (text.empty() && m.at("role") == "system" ? "" : "\n") + m.at("content").get<std::string>();
      const auto reply = answer(id.substr(0, id.rfind('-')), text);
      const auto used = usage_of(text, reply);
      const json body{{"model", "stand-in"},
                      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", reply}}}, {"finish_reason", "stop"}}}},
                      {"usage", {{"prompt_tokens", used.prompt_tokens}, {"completion_tokens", used.completion_tokens}}}};
      out += json{{"custom_id", id}, {"response", {{"status_code", 200}, {"body", body}}}, {"error", nullptr}}.dump() + "\n";
      ++answered;
    }
    kblaster::support::write_file_atomically(results, out);
  }
  return answered;
}

/// How a deferred run went.
struct rounds_outcome {
  int rounds = 0;              ///< hand-overs: batches submitted
  std::vector<int> requests;   ///< requests handed over in each round
  optimize_result result;      ///< the last command's
};

/// Runs `task` with `options` in `dir` (KB, run folder, batch folder) against `eval`, a deferred
/// model answered round by round by `answer`. Throws when a round hands nothing over but the
/// run still waits (it would wait for ever), or after `limit` rounds.
inline rounds_outcome run_in_rounds(const task_spec& task, const loop_options& options, const fs::path& dir,
                                    evaluator& eval, const answerer& answer, int limit = 200) {
  rounds_outcome out;
  llm::llm_config config;
  config.model = "stand-in";
  for (;;) {
    auto backend = std::make_unique<llm::files_backend>(config, dir / "batch");
    auto* deferred = backend.get();
    llm::llm_client model(std::move(backend), llm::options_from(config));
    run_environment env;
    env.kb_path = dir / "kb.sqlite";
    env.eval = &eval;
    env.model = &model;
    env.out_dir = dir / "run";
    out.result = run_optimization(task, options, env);
    if (out.result.stop_reason != stop_kind::waiting) return out;
    const auto handed = deferred->hand_over();
    if (handed.written == 0) throw std::runtime_error("the run waits but handed nothing over: " + handed.description);
    ++out.rounds;
    out.requests.push_back(handed.written);
    if (out.rounds > limit) throw std::runtime_error("more than " + std::to_string(limit) + " rounds");
    answer_batch_folder(dir / "batch", answer);
  }
}

/// The highest N of the gain lines in `text` (0: none).
inline int gains_in(const std::string& text) {
  int most = 0;
  const std::regex gain(std::string(feature_evaluator::gain_marker) + " (\\d+)");
  for (std::sregex_iterator it(text.begin(), text.end(), gain), end; it != end; ++it) most = std::max(most, std::stoi((*it)[1]));
  return most;
}

/// The stand-in that needs the most rounds a run can take without repairs: every rewrite is faster
/// than the source it was shown (`base`, the task's kernel, with one more gain line than that
/// source), so each step's candidate is a new best for the soft verifier to read; the soft
/// verifier passes unless `rejects` says otherwise of the candidate's gains; the textual gradient
/// finds a departure in the first attempt of the table, explains it and adds a lesson.
inline answerer improving_model(std::string base, std::function<bool(int gains)> rejects = {}) {
  return [base = std::move(base), rejects = std::move(rejects)](const std::string& role, const std::string& text) -> std::string {
    if (role == "lowering") {
      std::string source = base;
      for (int g = 1; g <= gains_in(text) + 1; ++g) source += std::string(feature_evaluator::gain_marker) + " " + std::to_string(g) + "\n";
      return "Applied the technique.\n```cuda\n" + source + "```\n";
    }
    if (role == "soft_verifier") {
      if (rejects && rejects(gains_in(text)))
        return R"({"verdict": "fail", "summary": "It skips the tail.", "issues": [{"kind": "removed_functionality", "detail": "the last n % 4 elements are never written"}]})";
      return R"({"verdict": "pass", "summary": "Same computation on every element.", "issues": []})";
    }
    if (role != "textual_gradient") throw std::runtime_error("the stand-in has no answer for the role " + role);
    // The first attempt of the table (id | task | state -> after | technique | ...).
    std::smatch row;
    if (!std::regex_search(text, row, std::regex(R"((\d+) \| [^|\n]+ \| (\w+) -> \S+ \| (\w+) \|)")))
      throw std::runtime_error("the stand-in found no attempt to cite in the textual gradient's request");
    const json departure{{"state", row[2]}, {"technique", row[3]}, {"attempt_ids", {std::stoll(row[1])}},
                         {"direction", "overpredicted"}, {"note", "measured below the prediction"}};
    return json{{"evaluation", {{"summary", "One prediction was too high."}, {"departures", {departure}}}},
                {"explanations",
                 {{{"state", row[2]}, {"technique", row[3]},
                   {"cause", "The kernel was already near its bound, so the rewrite had little left to gain."},
                   {"evidence", "the measured speedup"}, {"suggestion", "predict less"}}}},
                {"update",
                 {{"rationale", "Record what the departure taught."},
                  {"operations", {{{"op", "add_lesson"}, {"state", row[2]}, {"text", "Expect less of a rewrite once the kernel is near its bound."}}}}}}}
        .dump();
  };
}

}  // namespace loop_test
