// problem_set: finding, selecting and sharding KernelBench problems.
#include "engine/bench/problem_set.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

namespace {

int leading_id(const std::string& stem) {
  int id = 0;
  std::size_t i = 0;
  for (; i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i])) && i < 6; ++i) id = id * 10 + (stem[i] - '0');
  return i > 0 ? id : 0;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::vector<problem_ref> find_problems(const fs::path& kernelbench_dir, int level) {
  const auto sub = "level" + std::to_string(level);
  const fs::path candidates[] = {kernelbench_dir / "KernelBench" / sub, kernelbench_dir / sub};
  std::error_code ec;
  for (const auto& dir : candidates) {
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<problem_ref> out;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().filename().string().starts_with("_")) continue;
      if (fs::is_regular_file(e.path() / "task.json", ec)) {
        const auto name = e.path().filename().string();
        out.push_back({level, leading_id(name), name, e.path(), true});
        continue;
      }
      if (e.path().extension() != ".py") continue;
      const auto stem = e.path().stem().string();
      out.push_back({level, leading_id(stem), stem, e.path()});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.id, a.name) < std::tie(b.id, b.name); });
    return out;
  }
  throw problem_set_error("no level " + std::to_string(level) + " problems: neither " + candidates[0].string() + " nor " +
                          candidates[1].string() + " is a folder (pass a KernelBench checkout)");
}

std::vector<problem_ref> select_problems(const std::vector<problem_ref>& problems, const std::string& selection) {
  if (selection.empty()) return problems;
  std::set<std::size_t> chosen;
  std::istringstream in(selection);
  std::string part;
  while (std::getline(in, part, ',')) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (part.empty()) throw problem_set_error("--problems '" + selection + "' has an empty item");
    const auto dash = part.find('-');
    bool matched = false;
    if (all_digits(part) || (dash != std::string::npos && dash > 0 && all_digits(part.substr(0, dash)) &&
                             all_digits(part.substr(dash + 1)))) {
      const int lo = std::stoi(part.substr(0, dash == std::string::npos ? part.size() : dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      if (hi < lo) throw problem_set_error("--problems range '" + part + "' ends before it starts");
      for (std::size_t i = 0; i < problems.size(); ++i)
        if (problems[i].id >= lo && problems[i].id <= hi) chosen.insert(i), matched = true;
    } else {
      for (std::size_t i = 0; i < problems.size(); ++i)
        if (lower(problems[i].name).find(lower(part)) != std::string::npos) chosen.insert(i), matched = true;
    }
    if (!matched) throw problem_set_error("--problems item '" + part + "' matches no problem");
  }
  std::vector<problem_ref> out;
  for (auto i : chosen) out.push_back(problems[i]);
  return out;
}

std::vector<problem_ref> shard(const std::vector<problem_ref>& problems, int index, int count) {
  if (count < 1 || index < 0 || index >= count)
    throw problem_set_error("shard " + std::to_string(index) + " of " + std::to_string(count) + " does not exist");
  std::vector<problem_ref> out;
  for (std::size_t i = static_cast<std::size_t>(index); i < problems.size(); i += static_cast<std::size_t>(count))
    out.push_back(problems[i]);
  return out;
}

}  // namespace kblaster::engine::bench
