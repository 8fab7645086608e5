// Typed reading of the editor settings, with one message per unusable value.
#include "server/features/editor_settings.h"

#include <algorithm>

namespace kblaster::server {

using protocol::json;

namespace {

class reader {
 public:
  reader(const json& root, std::vector<std::string>* problems) : root_(root), problems_(problems) {}

  const json* find(const std::string& dotted) const {
    const json* at = &root_;
    std::size_t start = 0;
    while (true) {
      const auto dot = dotted.find('.', start);
      const std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!at->is_object()) return nullptr;
      const auto it = at->find(part);
      if (it == at->end() || it->is_null()) return nullptr;
      at = &*it;
      if (dot == std::string::npos) return at;
      start = dot + 1;
    }
  }
  void get(const std::string& key, bool& out) const {
    if (const json* v = find(key)) {
      if (v->is_boolean()) out = v->get<bool>();
      else complain(key, "must be true or false");
    }
  }
  void get(const std::string& key, std::string& out) const {
    if (const json* v = find(key)) {
      if (v->is_string()) out = v->get<std::string>();
      else complain(key, "must be a string");
    }
  }
  void get(const std::string& key, std::vector<std::string>& out) const {
    if (const json* v = find(key)) {
      const bool strings = v->is_array() && std::all_of(v->begin(), v->end(), [](const json& e) { return e.is_string(); });
      if (strings) out = v->get<std::vector<std::string>>();
      else complain(key, "must be an array of strings");
    }
  }
  // An array of argument lists (each an array of strings).
  void get(const std::string& key, std::vector<std::vector<std::string>>& out) const {
    if (const json* v = find(key)) {
      const auto is_list = [](const json& l) {
        return l.is_array() && std::all_of(l.begin(), l.end(), [](const json& e) { return e.is_string(); });
      };
      if (v->is_array() && std::all_of(v->begin(), v->end(), is_list)) out = v->get<std::vector<std::vector<std::string>>>();
      else complain(key, "must be an array of argument lists (arrays of strings), e.g. [[\"333\", \"77\"]]");
    }
  }
  // An object of strings, as NAME=VALUE pairs (an environment).
  void get_pairs(const std::string& key, std::vector<std::string>& out) const {
    if (const json* v = find(key)) {
      const bool strings = v->is_object() && std::all_of(v->begin(), v->end(), [](const json& e) { return e.is_string(); });
      if (!strings) return complain(key, "must be an object of strings (NAME: VALUE)");
      out.clear();
      for (const auto& [name, value] : v->items()) out.push_back(name + "=" + value.get<std::string>());
    }
  }
  template <class Number>
  void get(const std::string& key, Number& out, double lo, double hi) const {
    if (const json* v = find(key)) {
      if (v->is_number() && v->get<double>() >= lo && v->get<double>() <= hi) out = v->get<Number>();
      else complain(key, "must be a number from " + json(lo).dump() + " to " + json(hi).dump());
    }
  }

 private:
  void complain(const std::string& key, const std::string& what) const {
    if (problems_) problems_->push_back("setting kblaster." + key + " " + what + " (got " + find(key)->dump() + ")");
  }
  const json& root_;
  std::vector<std::string>* problems_;
};

}  // namespace

editor_settings read_editor_settings(const json& settings, std::vector<std::string>* problems) {
  editor_settings s;
  const reader r(settings, problems);
  r.get("analysis.enabled", s.analyze);
  r.get("analysis.debounceMs", s.debounce_ms, 0, 10000);
  r.get("profileOnSave", s.profile_on_save);
  r.get("arch", s.arch);
  r.get("ncuPath", s.ncu_path);
  r.get("knowledgeBase", s.kb_path);
  r.get("profile.replay", s.profile_replay);
  r.get("profile.replayTimeline", s.profile_replay_timeline);
  r.get("optimize.breadth", s.breadth, 1, 64);
  r.get("optimize.depth", s.depth, 1, 32);
  r.get("optimize.iterations", s.iterations, 1, 100);
  r.get("optimize.topK", s.top_k, 1, 64);
  r.get("optimize.policy", s.policy);
  r.get("optimize.seed", s.seed, 0, 9007199254740991.0);  // 2^53 - 1: exact in a JSON number
  r.get("optimize.budgetTokens", s.budget_tokens, 0, 1e12);
  r.get("optimize.budgetGpuSeconds", s.budget_gpu_seconds, 0, 1e7);
  r.get("optimize.budgetWallSeconds", s.budget_wall_seconds, 0, 1e7);
  r.get("optimize.budgetCandidates", s.budget_candidates, 0, 1e6);
  r.get("optimize.replayHarness", s.replay_harness);
  r.get("optimize.harness", s.harness);
  r.get("optimize.replayPace", s.replay_pace, 0, 10);
  r.get("optimize.outputDir", s.output_dir);
  r.get("run.args", s.run_args);
  r.get("run.cwd", s.run_cwd);
  r.get_pairs("run.env", s.run_env);
  r.get("run.launch", s.run_launch, 0, 1e9);
  r.get("run.timeoutSeconds", s.run_timeout_s, 1, 86400);
  r.get("run.command", s.run_command);
  r.get("run.build", s.run_build);
  r.get("run.shapes", s.run_shapes);
  r.get("llm.provider", s.llm_provider);
  r.get("llm.endpoint", s.llm_endpoint);
  r.get("llm.model", s.llm_model);
  r.get("llm.apiKeyEnv", s.llm_key_env);
  r.get("llm.replay", s.llm_replay);
  r.get("llm.batch", s.llm_batch);
  r.get("llm.batchWait", s.llm_batch_wait);
  r.get("llm.batchPollSeconds", s.llm_batch_poll_s, 0.1, 86400);
  if (s.arch.size() && s.arch.rfind("sm_", 0) != 0 && problems) {
    problems->push_back("setting kblaster.arch must look like sm_90 (got \"" + s.arch + "\")");
    s.arch.clear();
  }
  if (s.policy != "ucb" && s.policy != "weighted" && s.policy != "mean" && s.policy != "thompson" && s.policy != "greedy") {
    if (problems) problems->push_back("setting kblaster.optimize.policy must be ucb, weighted, mean, thompson or greedy (got \"" + s.policy + "\")");
    s.policy = "ucb";
  }
  return s;
}

engine::capture_request program_run_of(const editor_settings& settings) {
  engine::capture_request r;
  r.launch = settings.run_launch;
  r.run = {settings.run_args, settings.run_cwd, settings.run_env, settings.run_command, settings.run_build,
           settings.run_shapes};
  r.timeout = std::chrono::seconds(settings.run_timeout_s);
  return r;
}

}  // namespace kblaster::server
