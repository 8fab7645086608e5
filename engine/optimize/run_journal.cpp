// The checkpoint files: manifest.json (rewritten atomically), steps.jsonl (appended, fsync'd),
// sources/<hash>.cu.
#include "engine/optimize/run_journal.h"
#include "support/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kblaster::engine::optimize {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Empty when the file is missing: a run that has not written it yet.
std::string read_all(const fs::path& p) { return support::read_file_if_exists(p).value_or(""); }

void append_durably(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write the run journal " + path.string());
  std::size_t done = 0;
  while (done < line.size()) {
    const auto n = ::write(fd, line.data() + done, line.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("cannot write the run journal " + path.string());
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

run_journal::run_journal(fs::path dir, json identity) : dir_(std::move(dir)) {
  fs::create_directories(dir_ / "sources");
  const auto manifest_path = dir_ / "manifest.json";
  if (fs::exists(manifest_path)) {
    const json old = json::parse(read_all(manifest_path), nullptr, false);
    if (old.is_discarded() || !old.is_object() || !old.contains("identity"))
      throw std::invalid_argument(manifest_path.string() + " is not a KernelBlaster run checkpoint; choose another --out");
    for (const auto& [key, value] : identity.items())
      if (old["identity"].value(key, json()) != value)
        throw std::invalid_argument(dir_.string() + " holds another run (its " + key + " differs: " +
                                    old["identity"].value(key, json()).dump() + " there, " + value.dump() +
                                    " now); choose another --out or delete it");
    manifest_ = old;
    resumed_ = true;
  } else {
    manifest_ = {{"$format", "kblaster-run/1"}, {"identity", identity}, {"milestones", json::object()},
                 {"records", json::object()}};
    write_manifest();
  }
  // Replay the journal; a torn last line (killed mid-write) is cut off so appends stay valid.
  const auto journal = dir_ / "steps.jsonl";
  if (!fs::exists(journal)) return;
  const std::string text = read_all(journal);
  std::size_t pos = 0, good = 0;
  int line = 0;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    if (end == std::string::npos) break;
    ++line;
    const json j = json::parse(text.substr(pos, end - pos), nullptr, false);
    if (j.is_discarded() || !j.is_object()) break;
    try {
      auto rec = step_record_from_json(j);
      steps_[{rec.iteration, rec.trajectory, rec.step}] = std::move(rec);
    } catch (const std::invalid_argument& e) {
      // Whole JSON that is no step record was not torn by a kill: someone edited the journal,
      // or another program wrote it. Resuming from a guess could teach the KB wrong attempts.
      throw std::invalid_argument(journal.string() + " line " + std::to_string(line) + ": " + e.what() +
                                  "; delete the run folder or choose another --out");
    }
    pos = good = end + 1;
  }
  if (good < text.size()) fs::resize_file(journal, good);
}

std::optional<step_record> run_journal::find_step(int iteration, int trajectory, int step) const {
  std::lock_guard lock(mutex_);
  const auto it = steps_.find({iteration, trajectory, step});
  if (it == steps_.end()) return std::nullopt;
  return it->second;
}

std::vector<step_record> run_journal::steps() const {
  std::lock_guard lock(mutex_);
  std::vector<step_record> out;
  for (const auto& [key, rec] : steps_) out.push_back(rec);
  return out;
}

void run_journal::append_step(const step_record& step) {
  std::lock_guard lock(mutex_);
  append_durably(dir_ / "steps.jsonl", to_json(step).dump() + "\n");
  steps_[{step.iteration, step.trajectory, step.step}] = step;
}

std::optional<json> run_journal::record(const std::string& name) const {
  std::lock_guard lock(mutex_);
  if (!manifest_["records"].contains(name)) return std::nullopt;
  return manifest_["records"][name];
}

void run_journal::set_record(const std::string& name, const json& value) {
  std::lock_guard lock(mutex_);
  manifest_["records"][name] = value;
  write_manifest();
}

bool run_journal::reached(int iteration, const std::string& milestone) const {
  std::lock_guard lock(mutex_);
  const auto& m = manifest_["milestones"];
  const auto key = std::to_string(iteration);
  if (!m.contains(key)) return false;
  for (const auto& s : m[key])
    if (s == milestone) return true;
  return false;
}

void run_journal::mark(int iteration, const std::string& milestone) {
  std::lock_guard lock(mutex_);
  auto& list = manifest_["milestones"][std::to_string(iteration)];
  if (!list.is_array()) list = json::array();
  for (const auto& s : list)
    if (s == milestone) return;
  list.push_back(milestone);
  write_manifest();
}

void run_journal::put_source(const std::string& hash, const std::string& source) {
  const auto path = dir_ / "sources" / (hash + ".cu");
  std::lock_guard lock(mutex_);
  if (!fs::exists(path)) support::write_file_atomically(path, source);
}

std::string run_journal::source(const std::string& hash) const {
  const auto path = dir_ / "sources" / (hash + ".cu");
  if (!fs::exists(path)) throw std::runtime_error("the checkpoint lacks the source " + path.string());
  return read_all(path);
}

void run_journal::put_evaluation(const std::string& hash, const evaluation& e) {
  const auto path = dir_ / "evaluations" / (hash + ".json");
  std::lock_guard lock(mutex_);
  support::write_file_atomically(path, to_json(e).dump() + "\n");
}

std::optional<evaluation> run_journal::evaluation_of(const std::string& hash) const {
  const auto path = dir_ / "evaluations" / (hash + ".json");
  std::lock_guard lock(mutex_);
  if (!fs::exists(path)) return std::nullopt;
  try {
    return evaluation_from_json(nlohmann::json::parse(read_all(path)));
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged file: the candidate is measured again
  }
}

void run_journal::write_manifest() { support::write_file_atomically(dir_ / "manifest.json", manifest_.dump(2) + "\n"); }

}  // namespace kblaster::engine::optimize
