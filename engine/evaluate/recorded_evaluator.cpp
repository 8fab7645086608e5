// Recording evaluations to JSON lines and serving them back (see recorded_evaluator.h).
#include "engine/evaluate/recorded_evaluator.h"
#include "support/time.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <iterator>

namespace kblaster::engine::optimize {
namespace {

std::string host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return "unknown host";
  return buf.data();
}

using support::utc_now;

nlohmann::json request_json(const evaluation_request& r) { return {{"time", r.time}, {"profile", r.profile}}; }

// How well a recording made with `made` answers `wanted`: 2 same request, 1 did more, 0 did less.
int fit(const evaluation_request& made, const evaluation_request& wanted) {
  if (made.time == wanted.time && made.profile == wanted.profile) return 2;
  if ((made.time || !wanted.time) && (made.profile || !wanted.profile)) return 1;
  return 0;
}

}  // namespace

recording_evaluator::recording_evaluator(evaluator& inner, std::filesystem::path file, std::string note)
    : inner_(inner), file_(std::move(file)) {
  if (file_.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(file_.parent_path(), ec);
  }
  out_.open(file_, std::ios::app | std::ios::binary);
  if (!out_) throw evaluation_error("cannot open the recording file " + file_.string() + " for appending");
  const std::string describe = inner_.describe();
  if (note.empty()) note = host_name() + ", " + describe + ", " + utc_now();
  const nlohmann::json head{{"$source", note}, {"host", host_name()}, {"evaluator", describe}, {"date", utc_now()}};
  out_ << head.dump() << "\n" << std::flush;
}

evaluation recording_evaluator::evaluate(const std::string& task_name, const std::string& source,
                                         const evaluation_request& request) {
  evaluation e = inner_.evaluate(task_name, source, request);
  if (cancelled(e)) return e;  // no verdict on the candidate: nothing to replay later
  const nlohmann::json line{{"task", task_name},
                            {"hash", e.code_hash.empty() ? source_hash(task_name, source) : e.code_hash},
                            {"request", request_json(request)},
                            {"evaluation", to_json(e)}};
  std::lock_guard lock(mutex_);
  out_ << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
  if (!out_) throw evaluation_error("cannot write to the recording file " + file_.string());
  ++recorded_;
  return e;
}

std::string recording_evaluator::describe() const { return inner_.describe() + ", recorded to " + file_.string(); }

int recording_evaluator::recorded() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

replay_evaluator::replay_evaluator(std::vector<std::filesystem::path> files) : files_(std::move(files)) {
  if (files_.empty()) throw evaluation_error("replay: no recording file given");
  for (const auto& f : files_) load(f);
}

replay_evaluator::replay_evaluator(std::string_view text, const std::string& origin) : files_{origin} {
  load_text(text, origin);
}

void replay_evaluator::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw evaluation_error("replay: cannot read the recording file " + file.string());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  load_text(text, file.string());
}

void replay_evaluator::load_text(std::string_view all, const std::string& origin) {
  int line_no = 0;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = std::min(all.find('\n', at), all.size());
    const std::string_view text = all.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto where = origin + ":" + std::to_string(line_no) + ": ";
    try {
      const auto j = nlohmann::json::parse(text);
      if (!j.is_object()) throw std::invalid_argument("a line is a JSON object");
      if (j.contains("$source")) {
        notes_.push_back(j["$source"].is_string() ? j["$source"].get<std::string>() : j["$source"].dump());
        continue;
      }
      for (const char* k : {"task", "hash", "evaluation"})
        if (!j.contains(k)) throw std::invalid_argument(std::string("missing '") + k + "'");
      recording r;
      const auto& req = j.value("request", nlohmann::json::object());
      r.request.time = req.value("time", true);
      r.request.profile = req.value("profile", true);
      r.result = evaluation_from_json(j["evaluation"]);
      r.result.replayed = true;
      const auto task = j["task"].get<std::string>();
      const auto hash = j["hash"].get<std::string>();
      if (!r.result.gpu_name.empty()) {
        const auto gpu = r.result.gpu_name + (r.result.arch.empty() ? "" : " (" + r.result.arch + ")");
        if (std::find(gpus_.begin(), gpus_.end(), gpu) == gpus_.end()) gpus_.push_back(gpu);
      }
      by_key_[{task, hash}].push_back(std::move(r));
      ++per_task_[task];
      ++count_;
    } catch (const nlohmann::json::exception& e) {
      throw evaluation_error("replay: " + where + "corrupt recording: " + e.what());
    } catch (const std::invalid_argument& e) {
      throw evaluation_error("replay: " + where + "corrupt recording: " + e.what());
    }
  }
}

evaluation replay_evaluator::evaluate(const std::string& task_name, const std::string& source,
                                      const evaluation_request& request) {
  const auto hash = source_hash(task_name, source);
  const auto it = by_key_.find({task_name, hash});
  if (it == by_key_.end()) {
    const auto n = per_task_.find(task_name);
    throw evaluation_error("replay: no recording of task '" + task_name + "' with source hash " + hash + " (the " +
                           (n == per_task_.end() ? std::string("recordings hold no evaluation of this task")
                                                 : "recordings hold " + std::to_string(n->second) +
                                                       " evaluations of this task, none of this source") +
                           "); record it on a GPU machine with the live evaluator");
  }
  return served(best_recording(it->second, request), request);
}

const replay_evaluator::recording& replay_evaluator::best_recording(const std::vector<recording>& recordings,
                                                                   const evaluation_request& request) {
  // Best fit wins; among equals the latest recording (a re-measurement replaces an old one).
  const recording* best = nullptr;
  int best_fit = -1;
  for (const auto& r : recordings) {
    const int f = fit(r.request, request);
    if (f >= best_fit) {
      best_fit = f;
      best = &r;
    }
  }
  return *best;
}

evaluation replay_evaluator::served(const recording& r, const evaluation_request& request) {
  // Recorded with its profile, wanted without: answered as the live evaluator would, so that a
  // replayed run profiles (and counts) only what a live one does.
  if (!request.profile && r.request.profile && r.result.profile) return without_profile(r.result);
  return r.result;
}

std::optional<evaluation> replay_evaluator::find(const std::string& task_name, const std::string& source,
                                                 const evaluation_request& request) const {
  const auto it = by_key_.find({task_name, source_hash(task_name, source)});
  if (it == by_key_.end()) return std::nullopt;
  const auto& best = best_recording(it->second, request);
  if (fit(best.request, request) == 0 || (request.profile && !best.result.profile)) return std::nullopt;
  return served(best, request);
}

evaluation recorded_first_evaluator::evaluate(const std::string& task_name, const std::string& source,
                                              const evaluation_request& request) {
  if (auto e = earlier_.find(task_name, source, request)) return std::move(*e);
  return live_.evaluate(task_name, source, request);
}

std::string recorded_first_evaluator::describe() const {
  return live_.describe() + "; what " + earlier_.describe() + " holds is served from it";
}

std::string replay_evaluator::describe() const {
  std::string files;
  for (const auto& f : files_) files += (files.empty() ? "" : ", ") + f.string();
  std::string gpus;
  for (const auto& g : gpus_) gpus += (gpus.empty() ? "" : ", ") + g;
  std::string s = "replay of " + files + " (" + std::to_string(count_) + " recordings), recorded on GPU " +
                  (gpus.empty() ? std::string("unknown") : gpus);
  if (!notes_.empty()) s += ": " + notes_.front();
  return s;
}

}  // namespace kblaster::engine::optimize
