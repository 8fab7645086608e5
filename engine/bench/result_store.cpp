// result_store: atomic JSON files in a run directory.
#include "engine/bench/result_store.h"
#include "support/files.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

void write_json_atomic(const fs::path& path, const nlohmann::json& j) {
  try {
    support::write_file_atomically(path, j.dump(1) + "\n");
  } catch (const support::file_error& e) {
    throw store_error(e.what());
  }
}

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw store_error("cannot read " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(path.string() + " is not valid JSON: " + e.what());
  }
}

result_store::result_store(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  for (const char* sub : {"results", "tasks", "work"}) {
    fs::create_directories(root_ / sub, ec);
    if (ec) throw store_error("cannot create " + (root_ / sub).string() + ": " + ec.message());
  }
}

fs::path result_store::result_path(const std::string& key) const { return root_ / "results" / (key + ".json"); }

void result_store::ensure_manifest(const nlohmann::json& manifest) {
  if (!fs::exists(manifest_path())) {
    // Two Slurm tasks may both get here; both write the same settings, and rename keeps one whole.
    write_json_atomic(manifest_path(), manifest);
    return;
  }
  const auto stored = read_json_file(manifest_path());
  const auto want = manifest.value("hyperparameters", nlohmann::json::object());
  const auto have = stored.value("hyperparameters", nlohmann::json::object());
  if (want != have)
    throw store_error(root_.string() + " holds a run with other settings (" + have.dump() + ", now " + want.dump() +
                      "); resume with the same options or choose another --out");
}

std::optional<nlohmann::json> result_store::manifest() const {
  if (!fs::exists(manifest_path())) return std::nullopt;
  return read_json_file(manifest_path());
}

bool result_store::has(const std::string& key) const { return fs::exists(result_path(key)); }

void result_store::put(const problem_result& r) const { write_json_atomic(result_path(result_key(r.level, r.problem)), to_json(r)); }

std::vector<problem_result> result_store::results() const {
  std::map<std::string, problem_result> by_key;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_ / "results", ec)) {
    const auto name = e.path().filename().string();
    if (e.path().extension() != ".json" || name.starts_with(".")) continue;  // temporaries start with '.'
    try {
      by_key.emplace(e.path().stem().string(), problem_result_from_json(read_json_file(e.path())));
    } catch (const store_error&) {
      throw;
    } catch (const std::exception& ex) {
      throw store_error(e.path().string() + ": " + ex.what());
    }
  }
  std::vector<problem_result> out;
  for (auto& [key, r] : by_key) out.push_back(std::move(r));
  return out;
}

int merge_stores(const std::vector<fs::path>& inputs, const fs::path& out) {
  result_store dst(out);
  std::map<std::string, problem_result> merged;
  for (const auto& in : inputs) {
    if (!fs::is_directory(in / "results")) throw store_error(in.string() + " is not a bench run directory (no results/)");
    result_store src(in);
    if (const auto m = src.manifest(); m && !dst.manifest()) write_json_atomic(dst.manifest_path(), *m);
    for (auto& r : src.results()) {
      const auto key = result_key(r.level, r.problem);
      const auto it = merged.find(key);
      if (it == merged.end() || it->second.finished_at < r.finished_at) merged[key] = std::move(r);
    }
  }
  for (auto& r : dst.results()) merged.try_emplace(result_key(r.level, r.problem), std::move(r));
  for (const auto& [key, r] : merged) dst.put(r);
  return static_cast<int>(merged.size());
}

}  // namespace kblaster::engine::bench
