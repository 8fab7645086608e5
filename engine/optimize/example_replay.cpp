// The shipped example replayed (example_replay.h).
#include "engine/optimize/example_replay.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace kblaster::engine::optimize {

namespace fs = std::filesystem;

namespace {

constexpr const char* manifest_name = "example_replay.json";

// The source directory a build tree's CMakeCache.txt names, or empty.
fs::path source_dir_of_build(const fs::path& build) {
  std::ifstream cache(build / "CMakeCache.txt");
  const std::string key = "kblaster_SOURCE_DIR:STATIC=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  return {};
}

// Where the manifest may be, most specific first.
std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* dir = std::getenv("KBLASTER_EXAMPLES"); dir && *dir) out.push_back(fs::path(dir) / manifest_name);
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return out;
  for (auto dir = self.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (const auto src = source_dir_of_build(dir); !src.empty()) out.push_back(src / "examples" / manifest_name);
    out.push_back(dir / "share" / "kblaster" / "examples" / manifest_name);
  }
  return out;
}

}  // namespace

example_replay read_example_replay(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(file.string() + ": not JSON: " + e.what());
  }
  const auto dir = file.parent_path();
  example_replay e;
  try {
    e.name = j.at("name").get<std::string>();
    e.task_dir = fs::weakly_canonical(dir / j.at("task").get<std::string>());
    e.gpu_results = fs::weakly_canonical(dir / j.at("gpu_results").get<std::string>());
    e.answers = fs::weakly_canonical(dir / j.at("answers").get<std::string>());
    e.recorded_on = j.value("recorded_on", "");
    const auto o = j.value("options", nlohmann::json::object());
    e.breadth = o.value("breadth", e.breadth);
    e.depth = o.value("depth", e.depth);
    e.iterations = o.value("iterations", e.iterations);
    e.top_k = o.value("top_k", e.top_k);
    e.seed = o.value("seed", e.seed);
    e.policy = o.value("policy", e.policy);
  } catch (const nlohmann::json::exception& x) {
    throw std::runtime_error(file.string() + ": " + x.what());
  }
  for (const auto& p : {e.task_dir, e.gpu_results, e.answers})
    if (!fs::exists(p)) throw std::runtime_error(file.string() + ": " + p.string() + " does not exist");
  return e;
}

std::optional<example_replay> find_example_replay() {
  for (const auto& file : candidates()) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    try {
      return read_example_replay(file);
    } catch (const std::exception&) {
      continue;  // an incomplete installation: the next place, else none
    }
  }
  return std::nullopt;
}

optimize_request example_request(const example_replay& example, const fs::path& scratch, double pace) {
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const auto task = scratch / example.name;
  fs::copy(example.task_dir, task, fs::copy_options::recursive);
  optimize_request q;
  q.file = task.string();
  q.loop.breadth = example.breadth;
  q.loop.depth = example.depth;
  q.loop.iterations = example.iterations;
  q.loop.top_k = example.top_k;
  q.loop.seed = example.seed;
  q.loop.policy = example.policy;
  q.evaluator.replay = {example.gpu_results};
  q.evaluator.replay_pace = pace;
  q.model.replay = example.answers;
  q.kb_path = scratch / "kb.sqlite";  // fresh: the selection follows the recorded path
  q.out_dir = scratch / "run";
  return q;
}

}  // namespace kblaster::engine::optimize
